/**
 * One request to a backend as a handler object with a lifecycle (the shape of undici's
 * handlers): the connection reports head, body chunks, completion or failure; subclasses decide
 * what the client gets. Also the one way to write to a client with backpressure toward the
 * backend.
 */
import { performance } from 'node:perf_hooks';
import type { HttpResponse } from '../http/types.ts';
import type { BackendInfo } from '../plugin-api/backend.ts';
import { GatewayError } from '../base/errors.ts';
import type { BackendMetrics } from '../observe/metrics.ts';
import type { BackendTransport, Carrier, UpstreamError, UpstreamHandler } from './transport.ts';
import type { StreamOpening } from './stream-openings.ts';
import { upstreamError } from './upstreams.ts';
import { upstreamEnd, upstreamError as upstreamErrorChannel, upstreamHeaders, upstreamObserved, upstreamStart } from '../observe/channels.ts';
import { currentRequest } from '../observe/request-scope.ts';
import { UpstreamRecord } from '../observe/upstream-record.ts';

const kResumeOnDrain = Symbol('gatehouse.resumeOnDrain');
type Draining = HttpResponse & { [kResumeOnDrain]?: Exchange };

function onClientDrain(this: Draining): void {
  this[kResumeOnDrain]?.resume();
}

/**
 * Writes `chunk` to the client; when the client's buffer is full, pauses the backend until the
 * client drains it (one module-level listener per response, no closure).
 */
export function writeToClient(res: HttpResponse, chunk: Buffer, exchange: Exchange): boolean {
  if (res.write(chunk)) return true;
  const draining = res as Draining;
  if (draining[kResumeOnDrain] === undefined) {
    draining[kResumeOnDrain] = exchange;
    res.on('drain', onClientDrain);
  }
  return false;
}

/** The metrics outcome of a failed exchange. */
function outcomeOf(code: string): string {
  switch (code) {
    case 'backend_timeout':
      return 'timeout';
    case 'backend_unavailable':
      return 'unavailable';
    case 'stream_limit':
      return 'limited';
    default:
      return 'error';
  }
}

/**
 * One request to a backend. Subclasses decide what happens to the response (`head`, `data`,
 * `end`, `fail`); this class wires the pool, the abort, the timing and the error mapping.
 * One object per request, no closures.
 */
export abstract class Exchange implements UpstreamHandler {
  readonly backend: BackendInfo;
  readonly metrics: BackendMetrics;
  readonly startedAt: number;
  #transport: BackendTransport | null = null;
  #carrier: Carrier | null = null;
  /** True once the client went away (or the gateway closed the stream): nothing more is written. */
  cancelled = false;
  /**
   * A stream other requests of its session wait for (stream-openings.ts): settled when the
   * backend's response head arrives, or the exchange fails or is cancelled before that.
   */
  opening: StreamOpening | null = null;
  /** What the observation seam was told of this exchange (channels.ts), or null when nobody listens. */
  #observed: UpstreamRecord | null = null;

  constructor(backend: BackendInfo, metrics: BackendMetrics) {
    this.backend = backend;
    this.metrics = metrics;
    this.startedAt = performance.now();
  }

  /** Sends the request; `answerTimeoutMs` (> 0) bounds the whole answer, not only its head (BackendTransport.dispatch). */
  dispatch(transport: BackendTransport, method: string, headers: readonly string[], body: Buffer | null, answerTimeoutMs = 0): void {
    this.#transport = transport;
    if (upstreamObserved()) {
      const record = (this.#observed = new UpstreamRecord(currentRequest() ?? null, this.backend.name, this.backend.transport.kind, method, this.backend.path, headers, body));
      if (upstreamStart.hasSubscribers) upstreamStart.publish(record);
      if (record.changed) {
        headers = record.headers;
        body = record.body;
      }
    }
    transport.dispatch(this, method, this.backend.path, headers, body, this.backend.timeoutMs, answerTimeoutMs);
  }

  /** Tells the seam how the exchange ended, once. */
  #observedEnd(outcome: 'ok' | 'aborted' | 'error', errorCode: string | null): void {
    const record = this.#observed!;
    this.#observed = null;
    record.seconds = (performance.now() - record.startedAt) / 1000;
    record.outcome = outcome;
    record.errorCode = errorCode;
    const channel = outcome === 'error' ? upstreamErrorChannel : upstreamEnd;
    if (channel.hasSubscribers) channel.publish(record);
  }

  /** The client is gone (or the gateway is shutting the stream): stop the backend exchange. */
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.opening?.settle();
    if (this.#carrier !== null && this.#carrier.handler === this) this.#carrier.abort();
    else this.#transport?.cancel(this);
    this.metrics.outcome('aborted');
    if (this.#observed !== null) this.#observedEnd('aborted', null);
  }

  /** Resumes reading from the backend after backpressure. */
  resume(): void {
    this.#carrier?.resume();
  }

  // ---- UpstreamHandler ----
  // Each callback runs a subclass step inside the connection's socket callbacks. A step that
  // throws (a writer refusing what the backend sent, a plugin's hook) fails this exchange, once,
  // and never escapes into the socket callback, where it would end the process.

  onHeaders(status: number, headers: string[]): boolean {
    if (!this.headArrived(status)) return false;
    try {
      return this.head(status, headers);
    } catch (err) {
      this.broken(err);
      return false;
    }
  }

  onData(chunk: Buffer): boolean {
    if (this.cancelled) return false;
    try {
      return this.data(chunk);
    } catch (err) {
      this.broken(err);
      return false;
    }
  }

  onComplete(): void {
    this.#carrier = null;
    if (this.#observed !== null) this.#observedEnd('ok', null);
    if (this.cancelled) return;
    try {
      this.end();
    } catch (err) {
      this.broken(err);
    }
  }

  onError(err: UpstreamError): void {
    this.#carrier = null;
    this.opening?.settle();
    if (this.cancelled) return;
    const error = upstreamError(this.backend, err);
    this.metrics.outcome(outcomeOf(error.code));
    if (this.#observed !== null) this.#observedEnd('error', error.code);
    this.#failSafely(error);
  }

  /** The answer's head is here (however it came): timed, told to the seam, and the stream it opens settled. False once cancelled. */
  protected headArrived(status: number): boolean {
    this.metrics.ok((performance.now() - this.startedAt) / 1000);
    if (this.opening !== null) this.opening.settle();
    const record = this.#observed;
    if (record !== null) {
      record.status = status;
      record.headSeconds = (performance.now() - record.startedAt) / 1000;
      if (upstreamHeaders.hasSubscribers) upstreamHeaders.publish(record);
    }
    return !this.cancelled;
  }

  /** A step threw: the backend exchange stops, and the client is told as for a backend failure. */
  protected broken(err: unknown): void {
    if (this.#observed !== null) this.#observedEnd('error', 'backend_error');
    this.cancel();
    this.#failSafely(
      new GatewayError('backend_error', `the answer of backend "${this.backend.name}" could not be passed on`, {
        detail: err instanceof Error ? err.message : String(err),
        extra: { backend: this.backend.name },
        cause: err,
      }),
    );
  }

  #failSafely(error: GatewayError): void {
    try {
      this.fail(error);
    } catch {
      // fail() answers through the error mapping, which does not throw; nothing is left to try.
    }
  }

  /** What carries this exchange (a queued request gets its connection later). */
  attach(carrier: Carrier): void {
    this.#carrier = carrier;
  }

  protected abstract head(status: number, headers: string[]): boolean;
  protected abstract data(chunk: Buffer): boolean;
  protected abstract end(): void;
  protected abstract fail(error: GatewayError): void;
}
