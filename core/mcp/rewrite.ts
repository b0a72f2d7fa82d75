/**
 * The transparent path when an `onResponse` hook wants the response to this request's method:
 * the backend's JSON-RPC response is parsed, passed through the hooks, and written again. A JSON
 * body is read whole; an SSE stream is rewritten event by event, so progress and other
 * notifications before the response still reach the client the moment they arrive. Either is
 * bounded by the backend's maxResponseBytes (`operational.maxBackendResponseSize`): the JSON body,
 * the events of a request's stream summed, and each event of a GET stream (which lives as long as
 * its client likes); past it the client gets a JSON-RPC error naming the backend and the bound.
 */
import type { ResponseHook } from '../plugin-api/plugin.ts';
import { runResponseHooks } from '../server/chain.ts';
import { isPromise } from '../base/thenable.ts';
import type { Context } from '../plugin-api/context.ts';
import { errorBody, GatewayError } from '../base/errors.ts';
import { removeHeader } from '../http/header-list.ts';
import type { BackendInfo } from '../plugin-api/backend.ts';
import type { BackendMetrics } from '../observe/metrics.ts';
import { Exchange, writeToClient } from '../upstream/exchange.ts';
import { answerTooLarge } from '../upstream/upstreams.ts';
import { messageProblem, type JsonRpcResponse } from '../protocol/jsonrpc.ts';
import { HookedEvents, responseTo, type HookedEventsHost } from './hooked-events.ts';
import { clientHeaders, notMcpAnswer } from './pipe.ts';
import type { SessionOwners } from './session-owners.ts';
import type { OpenStream, OpenStreams } from './streams.ts';
import { SseParser, formatSseEvent, type SseEvent } from '../protocol/sse.ts';

type Mode = 'json' | 'sse' | 'raw';

/** A JSON media type (`application/json`, `application/problem+json`, …): the answer is read and hooked. */
const JSON_TYPE = /json/i;

/** An SSE event as the client gets it on the transparent path: as sent, or with the hooked response. */
function renderEvent(event: SseEvent, response: JsonRpcResponse | null): string {
  return response === null ? event.raw : formatSseEvent({ id: event.id, event: event.event, data: JSON.stringify(response) });
}

/**
 * An event of a GET stream, where no request of this exchange is answered: a JSON-RPC response on
 * it (the replay of a request's stream resumed with Last-Event-ID) is dropped, since nothing
 * says which method's hooks it would have to pass; everything else passes as sent.
 */
function renderStandaloneEvent(event: SseEvent): string {
  if (event.data.length === 0) return event.raw;
  try {
    const value = JSON.parse(event.data) as unknown;
    return messageProblem(value) === null && !('method' in (value as object)) ? '' : event.raw;
  } catch {
    return event.raw;
  }
}

export class RewriteExchange extends Exchange implements OpenStream, HookedEventsHost {
  /** A GET stream (with onResponse hooks configured): not part of any request, ended at once on shutdown. */
  readonly standalone: boolean;
  readonly ctx: Context;
  readonly #hooks: readonly ResponseHook[];
  readonly #streams: OpenStreams;
  #mode: Mode = 'raw';
  #status = 0;
  #headers: string[] = [];
  #chunks: Buffer[] = [];
  #size = 0;
  #parser: SseParser | null = null;
  #events: HookedEvents | null = null;
  /** Set on a request that opens or ends a session: its answer binds or unbinds the id (session-owners.ts). */
  owners: SessionOwners | null = null;

  constructor(ctx: Context, backend: BackendInfo, metrics: BackendMetrics, streams: OpenStreams, hooks: readonly ResponseHook[], standalone = false) {
    super(backend, metrics);
    this.ctx = ctx;
    this.standalone = standalone;
    this.#hooks = hooks;
    this.#streams = streams;
    ctx.inflight = this;
  }

  protected head(status: number, headers: string[]): boolean {
    const { list, sse, contentType } = clientHeaders(headers, this.ctx);
    if (status >= 404 && !this.standalone) {
      const notMcp = notMcpAnswer(status, contentType, this.ctx, this.backend);
      if (notMcp !== null) {
        this.cancel();
        this.fail(notMcp);
        return false;
      }
    }
    const foreign = this.owners === null ? null : this.owners.answered(this.ctx, status, headers);
    if (foreign !== null) {
      this.cancel();
      this.fail(foreign);
      return false;
    }
    this.#status = status;
    if (sse) {
      this.#mode = 'sse';
      this.#parser = new SseParser(this.backend.maxResponseBytes);
      this.#events = new HookedEvents(this.ctx, this.#hooks, this, this.standalone ? renderStandaloneEvent : renderEvent);
      this.ctx.res.writeHead(status, list);
      this.ctx.res.flushHeaders();
      this.#streams.add(this);
      return true;
    }
    // Names and media types in any case: `Content-Type: Application/JSON` must not slip past the hooks.
    if (contentType !== null && JSON_TYPE.test(contentType)) {
      this.#mode = 'json';
      // The body is written again: its length changes, and the client must get only the new one.
      removeHeader(list, 'content-length');
      this.#headers = list;
      return true;
    }
    this.#mode = 'raw';
    this.ctx.res.writeHead(status, list);
    return true;
  }

  protected data(chunk: Buffer): boolean {
    if (this.#mode === 'raw') return writeToClient(this.ctx.res, chunk, this);
    // A GET stream is no one answer: only its events are bounded (by the parser).
    if (!this.standalone) {
      this.#size += chunk.length;
      if (this.#size > this.backend.maxResponseBytes) return this.#tooLarge('an answer');
    }
    if (this.#mode === 'json') {
      this.#chunks.push(chunk);
      return true;
    }
    const events = this.#parser!.push(chunk);
    if (this.#parser!.tooLarge) return this.#tooLarge('an event');
    return this.#events!.push(events);
  }

  /** The answer grew past the backend's bound: it stops, and the client is told why. */
  #tooLarge(what: 'an answer' | 'an event'): false {
    this.cancel();
    this.fail(answerTooLarge(this.backend, what));
    return false;
  }

  // ---- HookedEventsHost ----

  write(text: string): boolean {
    return writeToClient(this.ctx.res, Buffer.from(text), this);
  }

  finish(): void {
    const rest = this.#parser!.rest();
    this.ctx.res.end(rest.length > 0 ? rest : undefined);
    this.#settle();
  }

  hookFailed(err: unknown): void {
    this.cancel();
    this.fail(err instanceof GatewayError ? err : new GatewayError('internal_error', 'a response hook failed', { detail: String(err), cause: err }));
  }

  protected end(): void {
    if (this.#mode === 'raw') {
      this.ctx.res.end();
      this.#settle();
    } else if (this.#mode === 'sse') {
      this.#events!.end();
    } else {
      this.#finishJson();
    }
  }

  #finishJson(): void {
    const body = Buffer.concat(this.#chunks, this.#size);
    this.#chunks = [];
    const response = responseTo(body.toString('utf8'), this.ctx.rpcId);
    if (response === null) {
      // Not the response to this request (an HTTP error page, say): pass it on untouched.
      this.#send(body);
      return;
    }
    const result = runResponseHooks(this.#hooks, this.ctx, response);
    if (isPromise(result)) {
      result.then((rewritten) => this.#send(Buffer.from(JSON.stringify(rewritten)))).catch((err: unknown) => this.hookFailed(err));
    } else {
      this.#send(Buffer.from(JSON.stringify(result)));
    }
  }

  #send(body: Buffer): void {
    if (this.cancelled) return;
    this.#headers.push('content-length', String(body.length));
    this.ctx.res.writeHead(this.#status, this.#headers);
    this.ctx.res.end(body);
    this.#settle();
  }

  protected fail(error: GatewayError): void {
    const ctx = this.ctx;
    const sse = this.#mode === 'sse' && this.#parser !== null;
    this.#settle();
    if (!ctx.res.headersSent) {
      ctx.fail(error);
      return;
    }
    if (sse && !this.standalone && ctx.rpcId !== null && !ctx.res.writableEnded) {
      // The request's stream is open: its client gets a JSON-RPC error on it rather than a cut connection.
      ctx.res.end(formatSseEvent({ event: 'message', data: errorBody(error, ctx) }));
    } else {
      ctx.res.destroy();
    }
    ctx.log(error);
  }

  close(): void {
    this.cancel();
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
    this.#settle();
  }

  #settle(): void {
    if (this.#mode === 'sse' && this.#parser !== null) {
      this.#parser = null;
      this.#streams.delete(this);
    }
    if (this.ctx.inflight === this) this.ctx.inflight = null;
  }
}
