import type { Logger } from 'pino';

/**
 * The telemetry settings both servers resolve from their `telemetry` section (ToolHive's vMCP
 * field names, core/config/telemetry-schema.ts), as the tracer takes them.
 */
export interface TelemetrySettings {
  /** The OTLP/HTTP collector as `host:port`, with a base path if any (`/v1/traces` is appended); null: the OTEL_EXPORTER_OTLP_* variables say. */
  readonly endpoint: string | null;
  /** `service.name`; null: OTEL_SERVICE_NAME, else the server's default. */
  readonly serviceName: string | null;
  /** http instead of https to the endpoint. */
  readonly insecure: boolean;
  readonly tracingEnabled: boolean;
  readonly metricsEnabled: boolean;
  /** The share of new traces recorded, 0 to 1 (a client's sampled flag decides for a trace it continues). */
  readonly samplingRate: number;
  /** Sent with every export (an API key of the collector). */
  readonly headers: Readonly<Record<string, string>>;
  /** Continue the trace a client names (`traceparent`), rather than start one per request. */
  readonly trustClientTraceContext: boolean;
}

/** No telemetry: what a configuration without a `telemetry` section resolves to. */
export const TELEMETRY_OFF: TelemetrySettings = Object.freeze({
  endpoint: null,
  serviceName: null,
  insecure: false,
  tracingEnabled: false,
  metricsEnabled: false,
  samplingRate: 0.05,
  headers: Object.freeze({}),
  trustClientTraceContext: false,
});

/** The OTLP/HTTP URL of one signal (`traces`, `metrics`), or undefined to let the exporter read OTEL_EXPORTER_OTLP_*. */
export function signalUrl(settings: TelemetrySettings, signal: 'traces' | 'metrics'): string | undefined {
  if (settings.endpoint === null) return undefined;
  const slash = settings.endpoint.indexOf('/');
  const hostPort = slash === -1 ? settings.endpoint : settings.endpoint.slice(0, slash);
  const basePath = slash === -1 ? '' : settings.endpoint.slice(slash).replace(/\/+$/, '');
  return (settings.insecure ? 'http://' : 'https://') + hostPort + basePath + '/v1/' + signal;
}

/** What a server gives the telemetry it starts (start-telemetry.ts). */
export interface TelemetryOptions {
  /** `service.name` when neither the config nor OTEL_SERVICE_NAME names one. */
  readonly defaultServiceName: string;
  readonly serviceVersion: string;
  /** Whether a request belongs to this server (the seam's channels are the process's). */
  readonly owns: (server: object) => boolean;
  /** Whether a backend request of this protocol version carries the trace context in `params._meta`. */
  readonly metaCarries: (protocolVersion: string | undefined) => boolean;
  readonly log: Logger;
}

export interface Telemetry {
  stop(): Promise<void>;
}


/** What the tracers need of @opentelemetry/api, loaded only when tracing is on. */
export type OtelApi = typeof import('@opentelemetry/api');
