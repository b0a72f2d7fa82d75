/**
 * The gateway's own HTTP calls made with undici (fetch) while it serves a request: the
 * authorization server's calls to upstream identity providers, a token exchange's call to its
 * STS, a JWKS or discovery read of token verification. Each becomes a CLIENT span, child of the
 * request's span, and carries the trace on (`traceparent`), through undici's own diagnostics
 * channels (`undici:request:*`). A call outside any request (a registry read, a timer) is not
 * traced. The URL's query is never recorded: only the method, the host and the status.
 */
import diagnostics from 'node:diagnostics_channel';
import type { Span } from '@opentelemetry/api';
import { CHANNELS } from '../channels.ts';
import type { OutboundRecord } from '../outbound-record.ts';
import { currentRequest } from '../request-scope.ts';
import type { RequestRecord } from '../request-record.ts';
import type { OtelApi } from './telemetry-settings.ts';
import { formatTraceparent } from './trace-context.ts';

/** What undici's `undici:request:*` messages carry, as far as this reads them. */
interface UndiciRequest {
  readonly origin?: unknown;
  readonly method?: unknown;
  addHeader?(name: string, value: string): unknown;
}

interface UndiciMessage {
  readonly request: UndiciRequest;
  readonly response?: { readonly statusCode?: unknown };
  readonly error?: unknown;
}

export interface FetchTracerOptions {
  readonly api: OtelApi;
  readonly tracer: import('@opentelemetry/api').Tracer;
  readonly owns: (server: object) => boolean;
  /** The span of a request being served (opened if it was not yet), or null when the request is not this tracer's or has ended. */
  readonly spanOf: (record: RequestRecord) => Span | null;
  readonly warn: (err: unknown, what: string) => void;
}

function hostOf(origin: unknown): string | undefined {
  if (typeof origin === 'string') return URL.canParse(origin) ? new URL(origin).host : undefined;
  return origin instanceof URL ? origin.host : undefined;
}

/** Subscribes to undici's channels and the gateway's outbound ones; returns what unsubscribes. */
export function traceFetches(options: FetchTracerOptions): () => void {
  const { api, tracer } = options;
  const spans = new WeakMap<object, Span>();
  /** The CLIENT span of a call starting now, child of the request being served; null outside one. */
  const open = (call: object, method: string, host: string | undefined): Span | null => {
    const record = currentRequest();
    if (record === undefined || !options.owns(record.server)) return null;
    const parent = options.spanOf(record);
    if (parent === null) return null;
    const attributes = { 'http.request.method': method, ...(host === undefined ? {} : { 'server.address': host }) };
    const span = tracer.startSpan(method, { kind: api.SpanKind.CLIENT, attributes }, api.trace.setSpan(api.ROOT_CONTEXT, parent));
    spans.set(call, span);
    return span;
  };
  const traceparent = (span: Span): string => {
    const context = span.spanContext();
    return formatTraceparent(context.traceId, context.spanId, (context.traceFlags & api.TraceFlags.SAMPLED) !== 0);
  };
  const close = (call: object, error: unknown): void => {
    const span = spans.get(call);
    if (span === undefined) return;
    spans.delete(call);
    if (error !== undefined && error !== null) {
      span.setAttribute('error.type', error instanceof Error ? error.name : typeof error === 'string' ? error : 'error');
      span.setStatus({ code: api.SpanStatusCode.ERROR });
    }
    span.end();
  };
  const created = (message: UndiciMessage): void => {
    const span = open(message.request, typeof message.request.method === 'string' ? message.request.method : 'GET', hostOf(message.request.origin));
    if (span !== null) message.request.addHeader?.('traceparent', traceparent(span));
  };
  const answered = (message: UndiciMessage): void => {
    const status = message.response?.statusCode;
    if (typeof status === 'number') spans.get(message.request)?.setAttribute('http.response.status_code', status);
  };
  const ended = (message: UndiciMessage): void => close(message.request, message.error);
  const outboundStarted = (record: OutboundRecord): void => {
    const span = open(record, record.method, hostOf(record.origin));
    if (span !== null) record.setHeader('traceparent', traceparent(span));
  };
  const outboundEnded = (record: OutboundRecord): void => {
    if (record.status !== 0) spans.get(record)?.setAttribute('http.response.status_code', record.status);
    close(record, record.error);
  };
  const subscriptions: [string, (message: never) => void][] = [
    ['undici:request:create', created],
    ['undici:request:headers', answered],
    ['undici:request:trailers', ended],
    ['undici:request:error', ended],
    [CHANNELS.outboundStart, outboundStarted],
    [CHANNELS.outboundEnd, outboundEnded],
    [CHANNELS.outboundError, outboundEnded],
  ];
  const listeners = subscriptions.map(([name, step]) => {
    const listener = (message: unknown): void => {
      try {
        step(message as never);
      } catch (err) {
        options.warn(err, name);
      }
    };
    diagnostics.subscribe(name, listener);
    return [name, listener] as const;
  });
  return () => {
    for (const [name, listener] of listeners) diagnostics.unsubscribe(name, listener);
  };
}
