/**
 * The transparent path when an `onResponse` hook wants the response to this request's method:
 * the backend's JSON-RPC response is parsed, passed through the hooks, and written again. A JSON
 * body is read whole; an SSE stream is rewritten event by event, so progress and other
 * notifications before the response still reach the client the moment they arrive. Either is
 * bounded by the backend's maxResponseBytes (`operational.maxBackendResponseSize`): the JSON body,
 * the events of a request's stream summed, and each event of a GET stream (which lives as long as
 * its client likes); past it the client gets a JSON-RPC error naming the backend and the bound.
 */
import { Buffer } from 'node:buffer';
import type { ResponseHook } from '../plugin-api/plugin.ts';
import { runResponseHooks } from '../server/chain.ts';
import { isPromise } from '../base/thenable.ts';
import type { Context } from '../plugin-api/context.ts';
import { errorBody, GatewayError } from '../base/errors.ts';
import { removeHeader } from '../base/header-list.ts';
import type { BackendInfo } from '../plugin-api/backend.ts';
import type { BackendMetrics } from '../observe/metrics.ts';
import { writeToClient } from '../upstream/exchange.ts';
import type { AnswerHead } from '../upstream/answer-reader.ts';
import { MessageExchange } from '../upstream/message-exchange.ts';
import { parseMessage, type JsonRpcResponse } from '../protocol/jsonrpc.ts';
import { HookedEvents, responseTo, type HookedEventsHost } from './hooked-events.ts';
import { clientHeaders, notMcpAnswer } from './pipe.ts';
import type { SessionOwners } from './session-owners.ts';
import type { OpenStream, OpenStreams } from './streams.ts';
import { formatSseEvent, type SseEvent } from '../protocol/sse.ts';

type Mode = 'json' | 'sse' | 'other';

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
  const message = parseMessage(event.data);
  return message !== null && !('method' in message) ? '' : event.raw;
}

/** A batch's answer (a JSON array, one response, or nothing) with the refused calls' errors after it; anything else as it came. */
function withRefused(body: Buffer, refused: readonly JsonRpcResponse[]): Buffer {
  if (body.length === 0) return Buffer.from(JSON.stringify(refused));
  let answer: unknown;
  try {
    answer = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (Array.isArray(answer)) return Buffer.from(JSON.stringify([...(answer as unknown[]), ...refused]));
  return typeof answer === 'object' && answer !== null ? Buffer.from(JSON.stringify([answer, ...refused])) : body;
}

export class RewriteExchange extends MessageExchange implements OpenStream, HookedEventsHost {
  /** A GET stream (with onResponse hooks configured): not part of any request, ended at once on shutdown. */
  readonly standalone: boolean;
  readonly ctx: Context;
  readonly #hooks: readonly ResponseHook[];
  readonly #streams: OpenStreams;
  #mode: Mode = 'other';
  #status = 0;
  #headers: string[] = [];
  #events: HookedEvents | null = null;
  /** The answer is an event stream among the open streams (until it settles). */
  #streaming = false;
  /** Set on a request that opens or ends a session: its answer binds or unbinds the id (session-owners.ts). */
  owners: SessionOwners | null = null;
  /**
   * Set on a batch some of whose calls the rate limits refused (transparent-endpoint.ts): their
   * errors are added to the backend's answer to the rest (the end of its JSON array or SSE
   * stream; its 202, when the rest wanted no answer, becomes 200 with them).
   */
  refused: JsonRpcResponse[] | null = null;

  constructor(ctx: Context, backend: BackendInfo, metrics: BackendMetrics, streams: OpenStreams, hooks: readonly ResponseHook[], standalone = false) {
    super(backend, metrics);
    this.ctx = ctx;
    this.standalone = standalone;
    this.#hooks = hooks;
    this.#streams = streams;
    ctx.inflight = this;
  }

  /** A GET stream is no one answer: only its events are bounded. */
  protected override get standing(): boolean {
    return this.standalone;
  }

  protected answered(head: AnswerHead, streamed: boolean): boolean {
    const unreadable = this.#unreadable(head, streamed);
    if (unreadable !== null) {
      this.cancel();
      this.fail(unreadable);
      return false;
    }
    const { list } = clientHeaders(head.headers, this.ctx);
    const status = head.status;
    if (status >= 404 && !this.standalone) {
      const notMcp = notMcpAnswer(status, head.mediaType === '' ? null : head.mediaType, this.ctx, this.backend);
      if (notMcp !== null) {
        this.cancel();
        this.fail(notMcp);
        return false;
      }
    }
    const foreign = this.owners === null ? null : this.owners.answered(this.ctx, status, head.headers);
    if (foreign !== null) {
      this.cancel();
      this.fail(foreign);
      return false;
    }
    this.#status = status;
    if (this.refused !== null && status === 202) {
      this.#status = 200;
      removeHeader(list, 'content-type');
      list.push('content-type', 'application/json');
    }
    if (streamed) {
      this.#mode = 'sse';
      this.#events = new HookedEvents(this.ctx, this.#hooks, this, this.standalone ? renderStandaloneEvent : renderEvent);
      this.ctx.res.writeHead(status, list);
      this.ctx.res.flushHeaders();
      this.#streaming = true;
      this.#streams.add(this);
      return true;
    }
    // Read whole and written again: its length may change, and the client must get only the new one.
    removeHeader(list, 'content-length');
    // A client reads as JSON more than application/json and its +json kinds (an SDK: any type
    // that includes `application/json`: `application/json-seq`, two types joined): none passes
    // the hooks unread.
    this.#mode = head.kind === 'json' || /json/i.test(head.mediaType) ? 'json' : 'other';
    this.#headers = list;
    return true;
  }

  /** Why an answer cannot pass: the hooks could not read it. Null when they can. */
  #unreadable(head: AnswerHead, streamed: boolean): GatewayError | null {
    const name = this.backend.name;
    // The gateway asked for no encoding (transparent-endpoint.ts): an encoded body would pass the
    // hooks unread (and a refused call's error would be written into it).
    if (head.encoding !== null) return new GatewayError('backend_error', `backend "${name}" sent a body encoded as ${JSON.stringify(head.encoding.slice(0, 32))}, which the gateway did not ask for`);
    // A client reads as an event stream a 2xx whose media type includes one (`text/event-streamed`,
    // two types joined), which the gateway's reader does not take for one.
    if (!streamed && head.status >= 200 && head.status < 300 && /text\/event-stream/i.test(head.mediaType)) {
      return new GatewayError('backend_error', `backend "${name}" answered with ${JSON.stringify(head.mediaType.slice(0, 64))}, not JSON or an event stream`);
    }
    return null;
  }

  protected events(events: readonly SseEvent[]): boolean {
    return this.#events!.push(events);
  }

  // ---- HookedEventsHost ----

  write(text: string): boolean {
    return writeToClient(this.ctx.res, Buffer.from(text), this);
  }

  finish(): void {
    for (const response of this.refused ?? []) this.ctx.res.write(formatSseEvent({ event: 'message', data: JSON.stringify(response) }));
    const rest = this.rest();
    this.ctx.res.end(rest.length > 0 ? rest : undefined);
    this.#settle();
  }

  hookFailed(err: unknown): void {
    this.cancel();
    this.fail(err instanceof GatewayError ? err : new GatewayError('internal_error', 'a response hook failed', { detail: String(err), cause: err }));
  }

  protected streamEnded(): void {
    this.#events!.end();
  }

  protected bodyRead(body: Buffer): void {
    if (this.refused !== null && this.#status < 300) {
      this.#send(withRefused(body, this.refused));
      return;
    }
    if (this.#mode === 'other') {
      // Not MCP's (an empty 202, a redirect, an error page): passed on as read.
      this.#send(body);
      return;
    }
    const response = responseTo(body.toString('utf8'), this.ctx.rpcId);
    if (response === null) {
      // Not the response to this request (an HTTP error in JSON, say): pass it on untouched.
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
    // 1xx, 204 and 304 carry no body, nor its length.
    if (this.#status >= 200 && this.#status !== 204 && this.#status !== 304) this.#headers.push('content-length', String(body.length));
    this.ctx.res.writeHead(this.#status, this.#headers);
    this.ctx.res.end(body.length > 0 ? body : undefined);
    this.#settle();
  }

  protected fail(error: GatewayError): void {
    const ctx = this.ctx;
    const sse = this.#mode === 'sse';
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
    if (this.#streaming) {
      this.#streaming = false;
      this.#streams.delete(this);
    }
    if (this.ctx.inflight === this) this.ctx.inflight = null;
  }
}
