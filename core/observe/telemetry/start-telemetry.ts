/**
 * Starting OpenTelemetry for one server, when its configuration asks for it. Off (the default),
 * nothing of the SDK is loaded: every OpenTelemetry package is imported here, dynamically, only
 * when tracing or metrics are enabled, and the seam's channels keep no subscriber of ours.
 *
 * Traces go through a BatchSpanProcessor (bounded queue, batches; the OTEL_BSP_* variables tune
 * it) to the OTLP/HTTP exporter (JSON). `stop()` exports what is queued and unsubscribes.
 */
import process from 'node:process';
import { RequestTracer } from './request-tracer.ts';
import { signalUrl, type Telemetry, type TelemetryOptions, type TelemetrySettings } from './telemetry-settings.ts';
import { RequestMeters } from './request-meters.ts';

async function resourceOf(settings: TelemetrySettings, options: TelemetryOptions) {
  const { detectResources, envDetector, resourceFromAttributes } = await import('@opentelemetry/resources');
  const { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } = await import('@opentelemetry/semantic-conventions');
  const own: Record<string, string> = { [ATTR_SERVICE_VERSION]: options.serviceVersion };
  const fromEnv = process.env['OTEL_SERVICE_NAME'];
  own[ATTR_SERVICE_NAME] = settings.serviceName ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : options.defaultServiceName);
  // OTEL_RESOURCE_ATTRIBUTES add to it; what the config says wins.
  return detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes(own));
}

async function startTracing(settings: TelemetrySettings, options: TelemetryOptions, resource: Awaited<ReturnType<typeof resourceOf>>): Promise<Telemetry> {
  const api = await import('@opentelemetry/api');
  const { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  const exporter = new OTLPTraceExporter({ url: signalUrl(settings, 'traces'), headers: { ...settings.headers } });
  const provider = new BasicTracerProvider({
    resource,
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.samplingRate) }),
    // Some values are the client's (a tool's name, a URI): bounded, whatever it sends.
    spanLimits: { attributeValueLengthLimit: 1024, attributeCountLimit: 64 },
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  let warned = false;
  const tracer = new RequestTracer({
    api,
    tracer: provider.getTracer('gatehouse', options.serviceVersion),
    owns: options.owns,
    trustClient: settings.trustClientTraceContext,
    metaCarries: options.metaCarries,
    warn: (err, what) => {
      if (warned) return;
      warned = true;
      options.log.warn({ err, channel: what }, 'tracing: a span could not be recorded (further failures are not logged)');
    },
  });
  tracer.start();
  return {
    async stop() {
      tracer.stop();
      await provider.shutdown();
    },
  };
}

/** Starts what `settings` enables, or returns null (nothing enabled, or OTEL_SDK_DISABLED). */
export async function startTelemetry(settings: TelemetrySettings, options: TelemetryOptions): Promise<Telemetry | null> {
  if (!settings.tracingEnabled && !settings.metricsEnabled) return null;
  if (process.env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') {
    options.log.info('telemetry is configured, but OTEL_SDK_DISABLED=true: none is sent');
    return null;
  }
  const resource = await resourceOf(settings, options);
  const parts: Telemetry[] = [];
  if (settings.tracingEnabled) parts.push(await startTracing(settings, options, resource));
  if (settings.metricsEnabled) parts.push(await RequestMeters.start(settings, options, resource));
  options.log.info({ endpoint: settings.endpoint ?? '(OTEL_EXPORTER_OTLP_*)', tracing: settings.tracingEnabled, metrics: settings.metricsEnabled, samplingRate: settings.samplingRate }, 'telemetry: OpenTelemetry started');
  return {
    async stop() {
      for (const part of parts) {
        try {
          if (!(await settledWithin(part.stop(), FINAL_EXPORT_MS))) options.log.warn(`telemetry: the last export did not finish within ${FINAL_EXPORT_MS / 1000} s (is the collector reachable?): what was queued is dropped`);
        } catch (err) {
          options.log.warn({ err }, 'telemetry: the last export failed');
        }
      }
    },
  };
}

/** How long a stop waits for the queued spans and metrics to be exported: a collector that does not answer must not hold the shutdown. */
const FINAL_EXPORT_MS = 3000;

/** True when `promise` settled within `ms` (its rejection is thrown); false when the time ran out first. */
async function settledWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
