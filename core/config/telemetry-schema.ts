/**
 * The `telemetry` section of both servers' configuration (the VirtualMCPServer's
 * `spec.config.telemetry`, the registry's top-level `telemetry`): OpenTelemetry traces and OTLP
 * metrics, with ToolHive's vMCP field names (`endpoint` as host:port, `serviceName`, `insecure`,
 * `tracingEnabled`, `samplingRate`, `metricsEnabled`, `headers`), plus Gatehouse's
 * `trustClientTraceContext`. Off unless enabled; the standard OTEL_* variables fill what the
 * section leaves out (core/config/README.md).
 */
import process from 'node:process';
import { z } from 'zod';
import { addIssue, q, text, whenMapping, type Ctx } from './formats.ts';
import { describeValue } from './problems.ts';
import { headerValueProblem } from './schema-parts.ts';
import { TELEMETRY_OFF, type TelemetrySettings } from '../observe/telemetry/telemetry-settings.ts';

/** host:port, then a base path if any; no scheme (insecure says http). */
const ENDPOINT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})(\/[A-Za-z0-9._~\-/%]*)?$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Where the OTLP exporter finds its endpoint when the config names none. */
const ENDPOINT_VARIABLES = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'];

const endpoint = z.string().superRefine((value, ctx) => {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    ctx.addIssue(`is host:port, without a scheme (ToolHive's form): write ${q(value.replace(/^[a-z][a-z0-9+.-]*:\/\//i, ''))}, and insecure: true for http`);
    return;
  }
  const port = Number(ENDPOINT.exec(value)?.[3] ?? 0);
  if (port < 1 || port > 65535) ctx.addIssue(`must be host:port, optionally followed by a base path, for example otel-collector:4318 (got ${q(value)})`);
});

/** ToolHive writes the rate as a string ("0.05"); a number is taken too. */
const samplingRate = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const rate = typeof value === 'number' ? value : value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) {
    ctx.addIssue(`must be a number from 0 to 1, the share of traces recorded (got ${describeValue(value)})`);
    return z.NEVER;
  }
  return rate;
});

const headers = z.record(z.string(), z.string()).superRefine((map, ctx) => {
  for (const [name, value] of Object.entries(map)) {
    if (!HEADER_NAME.test(name)) addIssue(ctx, [name], `must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~), got ${q(name)}`, 'key');
    const problem = headerValueProblem(value);
    if (problem !== null) addIssue(ctx, [name], `the value ${problem}`);
  }
});

function endpointNeeded(section: { endpoint?: string; tracingEnabled: boolean; metricsEnabled: boolean }, ctx: Ctx): void {
  const enabled = section.tracingEnabled || section.metricsEnabled;
  if (section.endpoint !== undefined && !enabled) {
    addIssue(ctx, ['endpoint'], 'an endpoint is set, but tracingEnabled and metricsEnabled are both false: enable one, or remove the endpoint');
  } else if (enabled && section.endpoint === undefined && !ENDPOINT_VARIABLES.some((name) => (process.env[name] ?? '') !== '')) {
    addIssue(ctx, ['endpoint'], `is needed where tracing or metrics are enabled (or set ${ENDPOINT_VARIABLES[0]})`, 'key');
  }
}

export const telemetrySchema = z
  .strictObject({
    endpoint: endpoint.optional(),
    serviceName: text.optional(),
    insecure: z.boolean().default(false),
    tracingEnabled: z.boolean().default(false),
    metricsEnabled: z.boolean().default(false),
    samplingRate: samplingRate.default(0.05),
    headers: headers.default({}),
    trustClientTraceContext: z.boolean().default(false),
  })
  .superRefine(endpointNeeded, whenMapping);

export type TelemetryInput = z.output<typeof telemetrySchema>;

/** The settings the tracer takes; TELEMETRY_OFF's shape when the section is absent. */
export function toTelemetrySettings(section: TelemetryInput | undefined): TelemetrySettings {
  if (section === undefined) return TELEMETRY_OFF;
  return {
    endpoint: section.endpoint ?? null,
    serviceName: section.serviceName ?? null,
    insecure: section.insecure,
    tracingEnabled: section.tracingEnabled,
    metricsEnabled: section.metricsEnabled,
    samplingRate: section.samplingRate,
    headers: section.headers,
    trustClientTraceContext: section.trustClientTraceContext,
  };
}
