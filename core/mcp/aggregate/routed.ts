/**
 * A client request routed to one backend of an aggregated session (tools/call, prompts/get,
 * resources/read, ...): the backend's answer goes back to the client as it comes, as the answer
 * of the gateway, which is the MCP server here.
 *
 *  - SSE: rewritten event by event: event ids name the backend (so a resumption finds it), and
 *    server→client requests get ids that name the backend (so the client's answer finds it).
 *  - JSON: held until it ends (or passes 64 KiB, then streamed) and sent with its length; the
 *    client's request id was kept, so the bytes are the backend's.
 *  - An HTTP error (4xx, 5xx): never the client's status. A backend that says it lost the
 *    session hands the request back to be sent again on a new one (`onLost`); any other refusal
 *    becomes a JSON-RPC error of this request (HTTP 200) naming the backend.
 *  - With onResponse hooks for the method, the response goes through them (JSON read whole,
 *    SSE through hooked-events.ts), after the ids are rewritten: hooks see what the client gets.
 */
import type { Context } from '../../context.ts';
import { errorBody, GatewayError } from '../../errors.ts';
import { pushCorsHeaders } from '../../http/cors.ts';
import type { ResponseHook } from '../../plugin.ts';
import { runResponseHooks } from '../../chain.ts';
import { isPromise } from '../../thenable.ts';
import { Exchange, writeToClient } from '../../upstream/exchange.ts';
import { HookedEvents, responseTo, type HookedEventsHost } from '../hooked-events.ts';
import { messageProblem, type JsonRpcMessage, type JsonRpcResponse } from '../jsonrpc.ts';
import { droppedHeaders, forwardHeaders } from '../pipe.ts';
import { MAX_JSON_RESPONSE } from '../rewrite.ts';
import { SseParser, formatSseEvent, type SseEvent } from '../sse.ts';
import { saysSessionLost, type BackendLink } from './backend-link.ts';
import { isResumableEventId, routedEventId, wrapRequestId } from './ids.ts';
import type { AggregatedSession } from './session.ts';
import type { BackendSessionRecord } from './session-store.ts';

/** Backend response headers the client never gets: hop-by-hop, and what the gateway sets itself. */
const DROPPED = droppedHeaders(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'mcp-session-id', 'x-request-id', 'content-length']);
/** A JSON answer is held (and sent with its length) up to this; a longer one is streamed. */
const HOLD_LIMIT = 64 * 1024;
/** What is kept of an error answer to word the client's error. */
const ERROR_BODY_LIMIT = 16 * 1024;
/** A 2xx JSON answer this small that mentions an error is read, in case it says the session is lost. */
const SMALL_ERROR = 4 * 1024;
const ERROR_MARK = Buffer.from('"error"');

/** Rewrites what a backend sends toward the client so that answers can find their way back. */
export function rewriteForClient(index: number, message: JsonRpcMessage, session: AggregatedSession): JsonRpcMessage {
  if ('method' in message) {
    if ('id' in message) return { ...message, id: wrapRequestId(index, message.id) };
    if (message.method === 'notifications/cancelled') {
      const requestId = message.params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') {
        return { ...message, params: { ...message.params, requestId: wrapRequestId(index, requestId) } };
      }
    }
    return message;
  }
  const taskId = ((message.result as { task?: { taskId?: unknown } } | undefined)?.task?.taskId);
  if (typeof taskId === 'string') session.tasks.set(taskId, index);
  return message;
}

/**
 * One SSE event from backend `index`, as the client gets it: `eventId` replaces the backend's
 * id, and a JSON-RPC message in it is rewritten (rewriteForClient). Comments pass through.
 */
export function rewriteEvent(event: SseEvent, eventId: string | null, index: number, session: AggregatedSession): string {
  if (event.data.length === 0 && event.id === null) return event.raw;
  let message: JsonRpcMessage | null = null;
  if (event.data.length > 0) {
    try {
      const value = JSON.parse(event.data) as unknown;
      if (messageProblem(value) === null) message = value as JsonRpcMessage;
    } catch {
      message = null;
    }
  }
  const data = message === null ? event.data : JSON.stringify(rewriteForClient(index, message, session));
  return formatSseEvent({ id: eventId, event: event.event, retry: event.retry, data });
}

/** What a routed exchange reports to whoever sent it (one object for every exchange: no closures). */
export interface RouteListener {
  /** The backend says it lost the session: the request was not executed and may be sent again. */
  lost(exchange: RoutedExchange): void;
  /** The exchange ended: `problem` is null when the backend answered, else why it failed. */
  outcome(exchange: RoutedExchange, problem: GatewayError | null): void;
}

type Mode = 'json' | 'stream' | 'sse' | 'refused';

export class RoutedExchange extends Exchange implements HookedEventsHost {
  readonly ctx: Context;
  readonly link: BackendLink;
  readonly session: AggregatedSession;
  /** The backend session the request was sent on. */
  readonly backendSession: BackendSessionRecord;
  /** The request's bytes as sent (POST), to send again on a new session. */
  readonly body: Buffer | null;
  /** Whether a lost session hands the request back (once per request) or is answered as an error. */
  readonly mayRetry: boolean;
  readonly #listener: RouteListener;
  readonly #hooks: readonly ResponseHook[] | null;
  /** Read the JSON answer whole even without hooks (a task-creating call: its task id is routed). */
  readonly #readJson: boolean;
  #mode: Mode = 'json';
  #status = 0;
  #headers: string[] = [];
  #chunks: Buffer[] = [];
  #size = 0;
  #parser: SseParser | null = null;
  #events: HookedEvents | null = null;

  constructor(
    ctx: Context,
    link: BackendLink,
    session: AggregatedSession,
    backend: BackendSessionRecord,
    listener: RouteListener,
    hooks: readonly ResponseHook[] | null,
    readJson: boolean,
    body: Buffer | null,
    mayRetry: boolean,
  ) {
    super(link.backend, link.metrics);
    this.ctx = ctx;
    this.link = link;
    this.session = session;
    this.backendSession = backend;
    this.body = body;
    this.mayRetry = mayRetry;
    this.#listener = listener;
    this.#hooks = hooks;
    this.#readJson = readJson || hooks !== null;
    ctx.inflight = this;
  }

  protected head(status: number, headers: string[]): boolean {
    this.#status = status;
    if (status >= 400) {
      this.#mode = 'refused';
      return true;
    }
    const { list, sse } = forwardHeaders(headers, DROPPED);
    list.push('mcp-session-id', this.session.id, 'x-request-id', this.ctx.requestId);
    pushCorsHeaders(list, this.ctx.corsOrigin);
    if (sse) {
      this.#mode = 'sse';
      this.#parser = new SseParser();
      if (this.#hooks !== null) this.#events = new HookedEvents(this.ctx, this.#hooks, this, (event, response) => this.#render(event, response));
      this.ctx.res.writeHead(status, list);
      this.ctx.res.flushHeaders();
      return true;
    }
    this.#headers = list;
    return true;
  }

  protected data(chunk: Buffer): boolean {
    switch (this.#mode) {
      case 'sse': {
        const events = this.#parser!.push(chunk);
        if (this.#events !== null) return this.#events.push(events);
        let out = '';
        for (const event of events) out += this.#render(event, null);
        return out.length === 0 ? true : writeToClient(this.ctx.res, Buffer.from(out), this);
      }
      case 'stream':
        return writeToClient(this.ctx.res, chunk, this);
      case 'refused':
        if (this.#size < ERROR_BODY_LIMIT) this.#hold(chunk);
        return true;
      case 'json':
        this.#hold(chunk);
        if (this.#readJson) {
          if (this.#size <= MAX_JSON_RESPONSE) return true;
          this.cancel();
          this.fail(new GatewayError('backend_error', `backend "${this.link.name}" sent a response larger than ${MAX_JSON_RESPONSE} bytes`, { extra: { backend: this.link.name } }));
          return false;
        }
        if (this.#size <= HOLD_LIMIT) return true;
        // Too long to hold: what came so far goes out, the rest streams.
        this.#mode = 'stream';
        this.ctx.res.writeHead(this.#status, this.#headers);
        return writeToClient(this.ctx.res, this.#take(), this);
    }
  }

  #hold(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
  }

  #take(): Buffer {
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#size);
    this.#chunks = [];
    return body;
  }

  protected end(): void {
    switch (this.#mode) {
      case 'sse':
        if (this.#events !== null) this.#events.end();
        else this.finish();
        return;
      case 'stream':
        this.ctx.res.end();
        this.#done(null);
        return;
      case 'refused':
        this.#refused();
        return;
      case 'json':
        this.#json();
    }
  }

  /** The whole JSON answer is here: a session error hands the request back; else hooks, then out. */
  #json(): void {
    const body = this.#take();
    const mayBeError = this.#size <= SMALL_ERROR && body.includes(ERROR_MARK);
    if (!this.#readJson && !mayBeError) return this.#send(body);
    const response = responseTo(body.toString('utf8'), this.ctx.rpcId);
    if (response === null) return this.#send(body);
    if (this.#lost(response, '')) return;
    rewriteForClient(this.link.index, response, this.session);
    if (this.#hooks === null) return this.#send(body);
    const hooked = runResponseHooks(this.#hooks, this.ctx, response);
    if (isPromise(hooked)) hooked.then((settled) => this.#send(Buffer.from(JSON.stringify(settled))), (err: unknown) => this.hookFailed(err));
    // Written from what the hooks passed, even unchanged: the client reads what they checked.
    else this.#send(Buffer.from(JSON.stringify(hooked)));
  }

  #send(body: Buffer): void {
    if (this.cancelled) return;
    this.#headers.push('content-length', String(body.length));
    this.ctx.res.writeHead(this.#status, this.#headers);
    this.ctx.res.end(body);
    this.#done(null);
  }

  /** The backend refused the request with an HTTP error: lost session, or a JSON-RPC error for the client. */
  #refused(): void {
    const text = this.#take().toString('utf8');
    let response: JsonRpcResponse | null = null;
    try {
      const value = JSON.parse(text) as unknown;
      if (messageProblem(value) === null && !('method' in (value as JsonRpcMessage))) response = value as JsonRpcResponse;
    } catch {
      response = null;
    }
    if (this.#lost(response, text)) return;
    const link = this.link;
    const status = this.#status;
    const said = response?.error?.message;
    const error = new GatewayError('backend_error', `backend "${link.name}" refused the request (HTTP ${status})${said === undefined ? '' : `: ${said}`}`, {
      status: 502,
      rpcCode: typeof response?.error?.code === 'number' ? response.error.code : undefined,
      detail: text.slice(0, 200),
      extra: { backend: link.name, status },
    });
    this.#answerError(error, status >= 500 ? error : null);
  }

  /** Whether the answer says the backend lost the session; then the request is handed back. */
  #lost(response: JsonRpcResponse | null, text: string): boolean {
    if (!this.mayRetry || this.backendSession.sessionId === null || !saysSessionLost(this.#status, response, text)) return false;
    this.#settle();
    this.#listener.lost(this);
    return true;
  }

  // ---- SSE (HookedEventsHost) ----

  /** An event as the client gets it: the routed id, the message rewritten, or the hooked response. */
  #render(event: SseEvent, response: JsonRpcResponse | null): string {
    const index = this.link.index;
    const id = isResumableEventId(event.id) ? routedEventId(index, event.id) : null;
    if (response === null) return rewriteEvent(event, id, index, this.session);
    return formatSseEvent({ id, event: event.event, retry: event.retry, data: JSON.stringify(rewriteForClient(index, response, this.session)) });
  }

  write(text: string): boolean {
    return text.length === 0 ? true : writeToClient(this.ctx.res, Buffer.from(text), this);
  }

  finish(): void {
    const rest = this.#parser?.rest() ?? '';
    this.ctx.res.end(rest.length > 0 ? rest : undefined);
    this.#done(null);
  }

  hookFailed(err: unknown): void {
    this.cancel();
    this.fail(err instanceof GatewayError ? err : new GatewayError('internal_error', 'a response hook failed', { detail: String(err), cause: err }));
  }

  protected fail(error: GatewayError): void {
    const ctx = this.ctx;
    if (!ctx.res.headersSent) {
      this.#answerError(error, error);
      return;
    }
    this.#done(error);
    if (this.#parser !== null && ctx.rpcId !== null) {
      ctx.res.end(formatSseEvent({ event: 'message', data: errorBody(error, ctx) }));
    } else {
      ctx.res.destroy();
    }
    ctx.log(error);
  }

  /** The gateway is the MCP server here: a backend failure is a JSON-RPC error of this request. */
  #answerError(error: GatewayError, problem: GatewayError | null): void {
    const ctx = this.ctx;
    this.#done(problem);
    const body = errorBody(error, ctx);
    const headers: string[] = ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(body)), 'mcp-session-id', this.session.id, 'x-request-id', ctx.requestId];
    pushCorsHeaders(headers, ctx.corsOrigin);
    ctx.res.writeHead(200, headers);
    ctx.res.end(body);
    ctx.log(error);
  }

  #done(problem: GatewayError | null): void {
    this.#settle();
    this.#listener.outcome(this, problem);
  }

  #settle(): void {
    if (this.ctx.rpcId !== null) this.session.inflight.delete(this.ctx.rpcId);
    if (this.ctx.inflight === this) this.ctx.inflight = null;
  }
}
