/**
 * OTLP metrics (`telemetry.metricsEnabled`): the request-path series the Prometheus endpoint
 * has, recorded from the observation seam and pushed to the collector. HTTP requests by route and
 * status (`http.server.request.duration`), MCP operations by method, tool and error
 * (`mcp.server.operation.duration`, the MCP semantic conventions), backend calls by backend and
 * outcome (`gatehouse.backend.request.duration`), and plugin hooks by plugin and phase
 * (`gatehouse.plugin.phase.duration`). Process metrics stay with Prometheus.
 */
import diagnostics from 'node:diagnostics_channel';
import type { Attributes, Histogram } from '@opentelemetry/api';
import { CHANNELS } from '../channels.ts';
import type { RequestRecord } from '../request-record.ts';
import type { UpstreamRecord } from '../upstream-record.ts';
import { signalUrl, type Telemetry, type TelemetryOptions, type TelemetrySettings } from './telemetry-settings.ts';

/** The MCP conventions' buckets for operation durations, in seconds. */
const MCP_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const PHASE_BUCKETS = [0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.005, 0.025, 0.1, 1];

interface Instruments {
  readonly http: Histogram;
  readonly mcp: Histogram;
  readonly backend: Histogram;
  readonly phase: Histogram;
}

function mcpAttributes(record: RequestRecord): Attributes {
  const attributes: Attributes = { 'mcp.method.name': record.rpcMethod! };
  // A name the gateway refused is the client's to choose: it would be a series of its own (the SDK caps them at 2000 per metric).
  if (record.errorCode === null && record.subjectKind === 'tool') attributes['gen_ai.tool.name'] = record.subjectName!;
  if (record.errorCode === null && record.subjectKind === 'prompt') attributes['gen_ai.prompt.name'] = record.subjectName!;
  if (record.protocolVersion !== null) attributes['mcp.protocol.version'] = record.protocolVersion;
  if (record.errorCode !== null) attributes['error.type'] = record.errorCode;
  return attributes;
}

function recordRequest(instruments: Instruments, record: RequestRecord): void {
  if (record.routeLabel === '') return;
  instruments.http.record(record.seconds, { 'http.request.method': record.method, 'http.route': record.routeLabel, 'http.response.status_code': record.status });
  if (record.rpcMethod !== null && record.rpcMethod !== 'batch') instruments.mcp.record(record.seconds, mcpAttributes(record));
  for (const phase of record.phases) instruments.phase.record(phase.seconds, { 'gatehouse.plugin.name': phase.plugin, 'gatehouse.plugin.phase': phase.phase });
}

export const RequestMeters = {
  async start(settings: TelemetrySettings, options: TelemetryOptions, resource: import('@opentelemetry/resources').Resource): Promise<Telemetry> {
    const { MeterProvider, PeriodicExportingMetricReader } = await import('@opentelemetry/sdk-metrics');
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
    const exporter = new OTLPMetricExporter({ url: signalUrl(settings, 'metrics'), headers: { ...settings.headers } });
    const provider = new MeterProvider({ resource, readers: [new PeriodicExportingMetricReader({ exporter })] });
    const meter = provider.getMeter('gatehouse', options.serviceVersion);
    const histogram = (name: string, description: string, buckets: number[]): Histogram =>
      meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: buckets } });
    const instruments: Instruments = {
      http: histogram('http.server.request.duration', 'HTTP requests, from request to the end of the response', HTTP_BUCKETS),
      mcp: histogram('mcp.server.operation.duration', 'MCP requests and notifications, from receipt to the end of the answer', MCP_BUCKETS),
      backend: histogram('gatehouse.backend.request.duration', 'Requests to backends, to the end of their answer', HTTP_BUCKETS),
      phase: histogram('gatehouse.plugin.phase.duration', 'Time in each plugin hook', PHASE_BUCKETS),
    };
    const onRequest = (message: unknown): void => {
      const record = message as RequestRecord;
      if (options.owns(record.server)) recordRequest(instruments, record);
    };
    const onBackend = (message: unknown): void => {
      const record = message as UpstreamRecord;
      if (record.request !== null && !options.owns(record.request.server)) return;
      instruments.backend.record(record.seconds, { 'mcp.server.name': record.backend, 'gatehouse.backend.outcome': record.errorCode ?? record.outcome });
    };
    diagnostics.subscribe(CHANNELS.requestEnd, onRequest);
    diagnostics.subscribe(CHANNELS.upstreamEnd, onBackend);
    diagnostics.subscribe(CHANNELS.upstreamError, onBackend);
    return {
      async stop() {
        diagnostics.unsubscribe(CHANNELS.requestEnd, onRequest);
        diagnostics.unsubscribe(CHANNELS.upstreamEnd, onBackend);
        diagnostics.unsubscribe(CHANNELS.upstreamError, onBackend);
        await provider.shutdown();
      },
    };
  },
};
