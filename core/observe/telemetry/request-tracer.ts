/**
 * The tracer: a subscriber of the observation seam (../channels.ts) that turns each request of
 * its server into a SERVER span, each plugin hook the request ran into a child span, and each
 * backend call into a CLIENT span whose context the backend gets (`traceparent` and
 * `tracestate` headers, and `params._meta` where the protocol carries it there).
 *
 * A request's span is opened when first needed (its first backend call, else its end), with the
 * request's own start time: by then the body is read, so a parent in `params._meta` can be
 * honoured as one in the headers can. A client's parent is taken only when the configuration
 * trusts clients (`trustClientTraceContext`), and only when it is valid (trace-context.ts);
 * otherwise the request starts a trace of its own.
 *
 * Nothing here throws into the publisher: a subscriber's exception would end the process.
 */
import type { Context as OtelContext, Span, Tracer } from '@opentelemetry/api';
import { CHANNELS } from '../channels.ts';
import diagnostics from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { RequestRecord } from '../request-record.ts';
import { scopeRequests } from '../request-scope.ts';
import type { UpstreamRecord } from '../upstream-record.ts';
import { formatTraceparent, remoteParent, type RemoteParent } from './trace-context.ts';
import { requestAttributes, requestSpanName, upstreamAttributes } from './span-attributes.ts';
import { backendMessage, withTraceMeta, type BackendMessage } from './meta-propagation.ts';
import { traceFetches } from './fetch-tracer.ts';
import type { OtelApi } from './telemetry-settings.ts';

export interface RequestTracerOptions {
  readonly api: OtelApi;
  readonly tracer: Tracer;
  /** Whether a request belongs to this tracer's server (the channels are the process's). */
  readonly owns: (server: object) => boolean;
  /** `trustClientTraceContext`: continue a client's trace. */
  readonly trustClient: boolean;
  /** Whether a backend request of this protocol version carries the trace context in `params._meta`. */
  readonly metaCarries: (protocolVersion: string | undefined) => boolean;
  /** Told (once per kind) when a subscriber step failed; tracing goes on. */
  readonly warn: (err: unknown, what: string) => void;
}

const epochMs = (perfMs: number): number => performance.timeOrigin + perfMs;
const NO_MESSAGE: BackendMessage = { method: null, message: null };

export class RequestTracer {
  readonly #o: RequestTracerOptions;
  readonly #spans = new WeakMap<RequestRecord, Span>();
  readonly #calls = new WeakMap<UpstreamRecord, Span>();
  /** The one backend a request's calls went to, or null once they went to several (a fan-out). */
  readonly #backends = new WeakMap<RequestRecord, string | null>();
  readonly #unsubscribe: (() => void)[] = [];

  constructor(options: RequestTracerOptions) {
    this.#o = options;
  }

  /** Subscribes to the seam (and scopes requests, so a backend call knows its request). */
  start(): void {
    this.#unsubscribe.push(scopeRequests());
    this.#on(CHANNELS.requestEnd, (m) => this.#requestEnded(m as RequestRecord));
    this.#on(CHANNELS.upstreamStart, (m) => this.#callStarted(m as UpstreamRecord));
    this.#on(CHANNELS.upstreamHeaders, (m) => this.#callAnswered(m as UpstreamRecord));
    this.#on(CHANNELS.upstreamEnd, (m) => this.#callEnded(m as UpstreamRecord));
    this.#on(CHANNELS.upstreamError, (m) => this.#callEnded(m as UpstreamRecord));
    const { api, tracer, owns, warn } = this.#o;
    this.#unsubscribe.push(traceFetches({ api, tracer, owns, warn, spanOf: (record) => (record.status !== 0 ? null : this.#requestSpan(record)) }));
  }

  stop(): void {
    for (const undo of this.#unsubscribe.splice(0)) undo();
  }

  #on(name: string, step: (message: unknown) => void): void {
    const listener = (message: unknown): void => {
      try {
        step(message);
      } catch (err) {
        this.#o.warn(err, name);
      }
    };
    diagnostics.subscribe(name, listener);
    this.#unsubscribe.push(() => diagnostics.unsubscribe(name, listener));
  }

  /** The client's parent, when clients are trusted: `params._meta` first (MCP's carrier), then the headers. */
  #parentOf(record: RequestRecord): RemoteParent | null {
    if (!this.#o.trustClient) return null;
    const fromMeta = remoteParent(record.meta('traceparent'), record.meta('tracestate'));
    return fromMeta ?? remoteParent(record.header('traceparent'), record.header('tracestate'));
  }

  #parentContext(parent: RemoteParent | null): OtelContext {
    const { api } = this.#o;
    if (parent === null) return api.ROOT_CONTEXT;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: parent.traceId,
      spanId: parent.spanId,
      traceFlags: parent.sampled ? api.TraceFlags.SAMPLED : api.TraceFlags.NONE,
      isRemote: true,
      traceState: parent.traceState === null ? undefined : api.createTraceState(parent.traceState),
    });
  }

  /** The request's span, opened now if it was not yet, with the request's start time. */
  #requestSpan(record: RequestRecord): Span {
    let span = this.#spans.get(record);
    if (span === undefined) {
      const name = record.method + ' ' + record.path;
      span = this.#o.tracer.startSpan(name, { kind: this.#o.api.SpanKind.SERVER, startTime: record.startTime }, this.#parentContext(this.#parentOf(record)));
      this.#spans.set(record, span);
      record.traceId = span.spanContext().traceId;
    }
    return span;
  }

  #requestEnded(record: RequestRecord): void {
    if (!this.#o.owns(record.server)) return;
    const span = this.#requestSpan(record);
    this.#spans.delete(record);
    const end = record.startTime + record.seconds * 1000;
    if (span.isRecording()) {
      span.updateName(requestSpanName(record));
      span.setAttributes(requestAttributes(record));
      // Transparent mode names no target unless a hook needs it: the one backend the calls went to is it.
      const backend = this.#backends.get(record);
      if (record.backend === null && backend !== undefined && backend !== null) span.setAttribute('mcp.server.name', backend);
      // A client that left is no failure of the gateway's (error.type says client_closed).
      if (record.outcome === 'error' || record.status >= 500) span.setStatus({ code: this.#o.api.SpanStatusCode.ERROR, message: record.errorCode ?? undefined });
      this.#phaseSpans(record, span);
    }
    span.end(end);
  }

  /** One child span per plugin hook the request ran (token verification, policy, token exchange...). */
  #phaseSpans(record: RequestRecord, parent: Span): void {
    const { api, tracer } = this.#o;
    const context = api.trace.setSpan(api.ROOT_CONTEXT, parent);
    for (const phase of record.phases) {
      const attributes = { 'gatehouse.plugin.name': phase.plugin, 'gatehouse.plugin.phase': phase.phase, 'gatehouse.plugin.answered': phase.failed };
      const span = tracer.startSpan(phase.phase + ' ' + phase.plugin, { kind: api.SpanKind.INTERNAL, startTime: epochMs(phase.startedAt), attributes }, context);
      span.end(epochMs(phase.startedAt) + phase.seconds * 1000);
    }
  }

  #callStarted(record: UpstreamRecord): void {
    const request = record.request;
    // status is set when a request ends: work that outlives its request (a connection it opened) is not its child.
    if (request === null || request.status !== 0 || !this.#o.owns(request.server)) return;
    const { api, tracer } = this.#o;
    const parent = this.#requestSpan(request);
    const seen = this.#backends.get(request);
    this.#backends.set(request, seen === undefined || seen === record.backend ? record.backend : null);
    const carries = this.#o.metaCarries(record.header('mcp-protocol-version'));
    // The body is read for the span's name only when the span is recorded (most are not, at a low sampling rate).
    const message = carries || parent.isRecording() ? backendMessage(record.body, carries) : NO_MESSAGE;
    // In transparent mode the method is the client's word: bounded as the request's span name is.
    const name = (message.method ?? record.method).slice(0, 100);
    const span = tracer.startSpan(name + ' ' + record.backend, { kind: api.SpanKind.CLIENT, startTime: record.startTime, attributes: upstreamAttributes(record, message.method) }, api.trace.setSpan(api.ROOT_CONTEXT, parent));
    this.#calls.set(record, span);
    const context = span.spanContext();
    const traceparent = formatTraceparent(context.traceId, context.spanId, (context.traceFlags & api.TraceFlags.SAMPLED) !== 0);
    const tracestate = context.traceState?.serialize() || null;
    record.setHeader('traceparent', traceparent);
    // The client's own tracestate (transparent mode passes its headers) must not ride along ours.
    if (tracestate !== null) record.setHeader('tracestate', tracestate);
    else record.removeHeader('tracestate');
    if (message.message !== null && carries) record.replaceBody(withTraceMeta(message.message, traceparent, tracestate));
  }

  #callAnswered(record: UpstreamRecord): void {
    this.#calls.get(record)?.setAttribute('http.response.status_code', record.status);
  }

  #callEnded(record: UpstreamRecord): void {
    const span = this.#calls.get(record);
    if (span === undefined) return;
    this.#calls.delete(record);
    if (record.outcome !== 'ok') {
      span.setAttribute('error.type', record.errorCode ?? record.outcome);
      if (record.outcome === 'error') span.setStatus({ code: this.#o.api.SpanStatusCode.ERROR, message: record.errorCode ?? undefined });
    } else if (record.status >= 500) {
      span.setAttribute('error.type', String(record.status));
      span.setStatus({ code: this.#o.api.SpanStatusCode.ERROR });
    }
    span.end(record.startTime + record.seconds * 1000);
  }
}
