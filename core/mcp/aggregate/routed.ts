/**
 * A client request routed to one backend of an aggregated session (tools/call, prompts/get,
 * resources/read, ...): the backend's answer streams back to the client as it comes. A JSON
 * answer passes through byte for byte (the client's request id was kept). An SSE answer is
 * rewritten event by event: event ids name the backend (so a resumption finds it), and
 * server→client requests get ids that name the backend (so the client's answer finds it).
 */
import type { Context } from '../../context.ts';
import { errorBody, type GatewayError } from '../../errors.ts';
import { isCorsHeader, pushCorsHeaders } from '../../http/cors.ts';
import { Exchange, writeToClient } from '../../upstream/exchange.ts';
import { messageProblem, type JsonRpcMessage } from '../jsonrpc.ts';
import { SseParser, formatSseEvent, type SseEvent } from '../sse.ts';
import type { BackendLink } from './backend-link.ts';
import { isResumableEventId, routedEventId, wrapRequestId } from './ids.ts';
import type { AggregatedSession } from './session.ts';

const DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'mcp-session-id', 'x-request-id', 'content-length']);
const EVENT_STREAM = /^text\/event-stream/i;

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

/** The client-facing id of a routed stream's event: none for an id that could not be handed back. */
function routedId(index: number, id: string | null): string | null {
  return isResumableEventId(id) ? routedEventId(index, id) : null;
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

export class RoutedExchange extends Exchange {
  readonly ctx: Context;
  readonly #link: BackendLink;
  readonly #session: AggregatedSession;
  /** Called instead of answering when the backend no longer knows its session (HTTP 404). */
  readonly #onLost: (() => void) | null;
  #parser: SseParser | null = null;
  #held: Buffer | null = null;
  #lost = false;
  #parseJson: boolean;
  #json: Buffer[] | null = null;

  constructor(ctx: Context, link: BackendLink, session: AggregatedSession, onLost: (() => void) | null, parseJson: boolean) {
    super(link.backend, link.metrics);
    this.ctx = ctx;
    this.#link = link;
    this.#session = session;
    this.#onLost = onLost;
    this.#parseJson = parseJson;
    ctx.inflight = this;
  }

  protected head(status: number, headers: string[]): boolean {
    if (status === 404 && this.#onLost !== null) {
      this.#lost = true;
      return true;
    }
    const list: string[] = [];
    for (let i = 0; i < headers.length; i += 2) {
      const lower = headers[i]!.toLowerCase();
      if (DROPPED.has(lower) || isCorsHeader(lower)) continue;
      if (lower === 'content-type' && EVENT_STREAM.test(headers[i + 1]!)) this.#parser = new SseParser();
      list.push(headers[i]!, headers[i + 1]!);
    }
    list.push('mcp-session-id', this.#session.id, 'x-request-id', this.ctx.requestId);
    pushCorsHeaders(list, this.ctx.corsOrigin);
    if (this.#parser !== null) {
      list.push('x-accel-buffering', 'no', 'cache-control', 'no-cache, no-transform');
      this.ctx.res.writeHead(status, list);
      this.ctx.res.flushHeaders();
      return true;
    }
    if (this.#parseJson) this.#json = [];
    this.ctx.res.writeHead(status, list);
    return true;
  }

  protected data(chunk: Buffer): boolean {
    if (this.#lost) return true;
    if (this.#parser !== null) {
      let out = '';
      for (const event of this.#parser.push(chunk)) out += rewriteEvent(event, routedId(this.#link.index, event.id), this.#link.index, this.#session);
      return out.length === 0 ? true : writeToClient(this.ctx.res, Buffer.from(out), this);
    }
    this.#json?.push(chunk);
    const held = this.#held;
    this.#held = chunk;
    return held === null ? true : writeToClient(this.ctx.res, held, this);
  }

  protected end(): void {
    this.#settle();
    if (this.#lost) {
      this.#onLost!();
      return;
    }
    if (this.#json !== null && this.#json.length > 0) {
      try {
        const message = JSON.parse(Buffer.concat(this.#json).toString('utf8')) as JsonRpcMessage;
        if (messageProblem(message) === null) rewriteForClient(this.#link.index, message, this.#session);
      } catch {
        // Not JSON-RPC: passed on as it is.
      }
    }
    const held = this.#held;
    this.#held = null;
    if (held === null) this.ctx.res.end();
    else this.ctx.res.end(held);
  }

  protected fail(error: GatewayError): void {
    this.#settle();
    const ctx = this.ctx;
    if (!ctx.res.headersSent) {
      // The gateway is the MCP server here: a backend failure is a JSON-RPC error of this request.
      const body = errorBody(error, ctx);
      ctx.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'mcp-session-id': this.#session.id, 'x-request-id': ctx.requestId });
      ctx.res.end(body);
      ctx.log(error);
      return;
    }
    if (this.#parser !== null && ctx.rpcId !== null) {
      ctx.res.end(formatSseEvent({ event: 'message', data: errorBody(error, ctx) }));
    } else {
      ctx.res.destroy();
    }
    ctx.log(error);
  }

  #settle(): void {
    if (this.ctx.rpcId !== null) this.#session.inflight.delete(this.ctx.rpcId);
    if (this.ctx.inflight === this) this.ctx.inflight = null;
  }
}
