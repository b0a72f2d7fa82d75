/**
 * The transparent path: a backend's response goes to the client exactly as the backend sent it
 * (status, headers minus hop-by-hop ones, body bytes), JSON or SSE. SSE chunks are written the
 * moment they arrive (`X-Accel-Buffering: no` tells buffering proxies in front to do the same);
 * backpressure from a slow client pauses the backend read.
 */
import type { Context } from '../plugin-api/context.ts';
import { errorBody, GatewayError } from '../base/errors.ts';
import { CORS_PREFIX, isCorsHeader, pushCorsHeaders } from '../http/cors.ts';
import { isHeaderNamed } from '../base/header-list.ts';
import { Exchange, writeToClient } from '../upstream/exchange.ts';
import { EVENT_STREAM_TYPE, JSON_TYPE } from '../upstream/answer-reader.ts';
import type { BackendInfo } from '../plugin-api/backend.ts';
import type { BackendMetrics } from '../observe/metrics.ts';
import { formatSseEvent } from '../protocol/sse.ts';
import type { SessionOwners } from './session-owners.ts';
import type { OpenStream, OpenStreams } from './streams.ts';

/**
 * Backend response headers a path does not pass on, by the length of their names: a name is
 * compared (in any letter case, without lowering it: isHeaderNamed) only with those of its length,
 * so most headers cost one array read.
 */
export interface DroppedHeaders {
  readonly byLength: readonly (readonly string[] | undefined)[];
}

export function droppedHeaders(names: readonly string[]): DroppedHeaders {
  const byLength: string[][] = [];
  for (const name of names) (byLength[name.length] ??= []).push(name);
  return { byLength };
}

/** Hop-by-hop headers, and what the gateway sets itself: never passed back on the transparent path. */
const TRANSPARENT_DROPPED = droppedHeaders(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'x-request-id']);

/** A backend's response headers as the client gets them, and what the filter saw. */
export interface ForwardedHeaders {
  readonly list: string[];
  readonly sse: boolean;
  /** The backend's Content-Type, found by its name in any case (null when it sent none). */
  readonly contentType: string | null;
}

/**
 * Copies a backend's response headers into the list written to the client, without `dropped`
 * and CORS headers (the gateway writes its own), and adds the stream headers an SSE answer
 * needs when the backend did not send them.
 */
export function forwardHeaders(headers: string[], dropped: DroppedHeaders): ForwardedHeaders {
  const list: string[] = [];
  let sse = false;
  let contentType: string | null = null;
  let cacheControl = false;
  let accelBuffering = false;
  const byLength = dropped.byLength;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    const length = name.length;
    const sameLength = length < byLength.length ? byLength[length] : undefined;
    if (sameLength !== undefined && isOneOf(name, sameLength)) continue;
    if (length > CORS_PREFIX.length && isCorsHeader(name)) continue; // the gateway writes its own
    if (length === 12 && isHeaderNamed(name, 'content-type')) {
      contentType = value;
      // The two spellings nearly every backend writes are told without the expression (answer-reader.ts reads them so too).
      sse = value === 'text/event-stream' || (value !== 'application/json' && EVENT_STREAM_TYPE.test(value));
    } else if (length === 13 && isHeaderNamed(name, 'cache-control')) cacheControl = true;
    else if (length === 17 && isHeaderNamed(name, 'x-accel-buffering')) accelBuffering = true;
    list.push(name, value);
  }
  pushStreamHeaders(list, sse, cacheControl, accelBuffering);
  return { list, sse, contentType };
}

function isOneOf(name: string, lowerNames: readonly string[]): boolean {
  for (let i = 0; i < lowerNames.length; i++) if (isHeaderNamed(name, lowerNames[i]!)) return true;
  return false;
}

/**
 * Whether a backend's answer to a client's POST says it is not an MCP endpoint: a 404 or 405
 * that is neither JSON nor an event stream, to a request that named no session (with a session,
 * a 404 is MCP's "unknown session", which the client must see). It is what a backend URL
 * without its path (`http://host:port` for `…/mcp`) gets: an error page the client could not
 * read, so the gateway answers with a JSON-RPC error naming the backend, and logs it.
 */
export function notMcpAnswer(status: number, contentType: string | null, ctx: Context, backend: BackendInfo): GatewayError | null {
  if ((status !== 404 && status !== 405) || ctx.head.sessionId !== undefined || ctx.req.method !== 'POST') return null;
  if (contentType !== null && (JSON_TYPE.test(contentType) || EVENT_STREAM_TYPE.test(contentType))) return null;
  const type = contentType === null ? 'no content type' : contentType.split(';')[0]!.trim().slice(0, 60);
  return new GatewayError(
    'backend_error',
    `backend "${backend.name}" at ${backend.url.href} answered HTTP ${status} (${type}), not as an MCP server: check its URL (MCP servers usually serve /mcp)`,
    { extra: { backend: backend.name } },
  );
}

/** The transparent path's headers toward the client: the backend's, the request id, CORS. */
export function clientHeaders(headers: string[], ctx: Context): ForwardedHeaders {
  const forwarded = forwardHeaders(headers, TRANSPARENT_DROPPED);
  pushCorsHeaders(forwarded.list, ctx.corsOrigin);
  // The request id, which differs every time, last: the head's lines before it are the last answer's (head-memo.ts).
  forwarded.list.push('x-request-id', ctx.requestId);
  return forwarded;
}

/**
 * What an SSE response needs so that proxies in front pass events on at once: each header only
 * when the backend did not send its own (which is kept as it is), so none appears twice.
 */
function pushStreamHeaders(list: string[], sse: boolean, hasCacheControl: boolean, hasAccelBuffering: boolean): void {
  if (!sse) return;
  if (!hasAccelBuffering) list.push('x-accel-buffering', 'no');
  if (!hasCacheControl) list.push('cache-control', 'no-cache, no-transform');
}

export class PipeExchange extends Exchange implements OpenStream {
  readonly ctx: Context;
  readonly #streams: OpenStreams;
  /** A GET stream: not part of any request, ended at once on shutdown. */
  readonly standalone: boolean;
  #sse = false;
  #held: Buffer | null = null;
  /** Set on a request that opens or ends a session: its answer binds or unbinds the id (session-owners.ts). */
  owners: SessionOwners | null = null;

  constructor(ctx: Context, backend: BackendInfo, metrics: BackendMetrics, streams: OpenStreams, standalone: boolean) {
    super(backend, metrics);
    this.ctx = ctx;
    this.#streams = streams;
    this.standalone = standalone;
    ctx.inflight = this;
  }

  protected head(status: number, headers: string[]): boolean {
    const res = this.ctx.res;
    const { list, sse, contentType } = clientHeaders(headers, this.ctx);
    if (status >= 404 && !this.standalone) {
      const notMcp = notMcpAnswer(status, contentType, this.ctx, this.backend);
      if (notMcp !== null) return this.refuse(notMcp);
    }
    if (this.owners !== null) {
      const foreign = this.owners.answered(this.ctx, status, headers);
      if (foreign !== null) return this.refuse(foreign);
    }
    res.writeHead(status, list);
    if (sse) {
      this.#sse = true;
      res.flushHeaders();
      this.#streams.add(this);
    }
    return true;
  }

  protected data(chunk: Buffer): boolean {
    if (this.#sse) return this.#write(chunk);
    // A JSON body usually arrives as one chunk: hold it so that end() sends it with the headers
    // in a single write.
    const held = this.#held;
    this.#held = chunk;
    return held === null ? true : this.#write(held);
  }

  #write(chunk: Buffer): boolean {
    return writeToClient(this.ctx.res, chunk, this);
  }

  protected end(): void {
    const held = this.#held;
    this.#held = null;
    if (held === null) this.ctx.res.end();
    else this.ctx.res.end(held);
    this.#settle();
  }

  /** Stops the backend's answer and gives the client `error` instead. */
  refuse(error: GatewayError): false {
    this.cancel();
    this.fail(error);
    return false;
  }

  protected fail(error: GatewayError): void {
    const ctx = this.ctx;
    this.#settle();
    if (!ctx.res.headersSent) {
      ctx.fail(error);
      return;
    }
    if (this.#sse && ctx.rpcId !== null) {
      // The backend died in the middle of answering a request: the client gets a JSON-RPC error
      // for that request on the stream instead of waiting forever.
      ctx.res.end(formatSseEvent({ event: 'message', data: errorBody(error, ctx) }));
      ctx.log(error);
      return;
    }
    ctx.res.destroy();
    ctx.log(error);
  }

  /** Ends the client's stream cleanly (shutdown) and stops the backend exchange. */
  close(): void {
    this.cancel();
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
    this.#settle();
  }

  #settle(): void {
    if (this.#sse) {
      this.#sse = false;
      this.#streams.delete(this);
    }
    if (this.ctx.inflight === this) this.ctx.inflight = null;
  }
}
