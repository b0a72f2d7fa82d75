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

/** The CLIENT spans of calls in flight, each opened as a child of the request being served. */
class ClientSpans {
  readonly #options: FetchTracerOptions;
  readonly #spans = new WeakMap<object, Span>();

  constructor(options: FetchTracerOptions) {
    this.#options = options;
  }

  /** Opens the span of `call`, starting now; returns its `traceparent`, or null outside a request of this tracer's. */
  open(call: object, method: string, host: string | undefined): string | null {
    const { api, tracer } = this.#options;
    const record = currentRequest();
    if (record === undefined || !this.#options.owns(record.server)) return null;
    const parent = this.#options.spanOf(record);
    if (parent === null) return null;
    const attributes = { 'http.request.method': method, ...(host === undefined ? {} : { 'server.address': host }) };
    const span = tracer.startSpan(method, { kind: api.SpanKind.CLIENT, attributes }, api.trace.setSpan(api.ROOT_CONTEXT, parent));
    this.#spans.set(call, span);
    const context = span.spanContext();
    return formatTraceparent(context.traceId, context.spanId, (context.traceFlags & api.TraceFlags.SAMPLED) !== 0);
  }

  status(call: object, status: number): void {
    this.#spans.get(call)?.setAttribute('http.response.status_code', status);
  }

  /** Ends the span of `call`: an error (an Error, or an error's name) marks it failed. */
  close(call: object, error: unknown): void {
    const span = this.#spans.get(call);
    if (span === undefined) return;
    this.#spans.delete(call);
    if (error !== undefined && error !== null) {
      span.setAttribute('error.type', error instanceof Error ? error.name : typeof error === 'string' ? error : 'error');
      span.setStatus({ code: this.#options.api.SpanStatusCode.ERROR });
    }
    span.end();
  }
}

/** What each channel's message does to the spans: undici's (fetch on this thread) and the gateway's outbound ones (IssuerHttp's thread). */
function channelSteps(spans: ClientSpans): [string, (message: never) => void][] {
  return [
    [
      'undici:request:create',
      (message: UndiciMessage) => {
        const method = typeof message.request.method === 'string' ? message.request.method : 'GET';
        const traceparent = spans.open(message.request, method, hostOf(message.request.origin));
        if (traceparent !== null) message.request.addHeader?.('traceparent', traceparent);
      },
    ],
    [
      'undici:request:headers',
      (message: UndiciMessage) => {
        const status = message.response?.statusCode;
        if (typeof status === 'number') spans.status(message.request, status);
      },
    ],
    ['undici:request:trailers', (message: UndiciMessage) => spans.close(message.request, message.error)],
    ['undici:request:error', (message: UndiciMessage) => spans.close(message.request, message.error)],
    [
      CHANNELS.outboundStart,
      (record: OutboundRecord) => {
        const traceparent = spans.open(record, record.method, hostOf(record.origin));
        if (traceparent !== null) record.setHeader('traceparent', traceparent);
      },
    ],
    [
      CHANNELS.outboundEnd,
      (record: OutboundRecord) => {
        spans.status(record, record.status);
        spans.close(record, null);
      },
    ],
    [CHANNELS.outboundError, (record: OutboundRecord) => spans.close(record, record.error)],
  ];
}

/** Subscribes to undici's channels and the gateway's outbound ones; returns what unsubscribes. */
export function traceFetches(options: FetchTracerOptions): () => void {
  const listeners = channelSteps(new ClientSpans(options)).map(([name, step]) => {
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
