/**
 * The client's standalone GET stream of an aggregated session: the gateway opens the GET stream
 * of every backend session and multiplexes their events into the client's one stream. Event ids
 * carry the last position of every backend (ids.ts), so a client that reconnects with
 * Last-Event-ID resumes each backend where it was. A backend stream that drops (a restart) is
 * reopened with backoff while the client is connected.
 */
import type { Context } from '../../context.ts';
import { GatewayError } from '../../errors.ts';
import { addCorsHeaders } from '../../http/cors.ts';
import { Exchange } from '../../upstream/exchange.ts';
import type { JsonRpcMessage } from '../jsonrpc.ts';
import { SseParser, formatSseEvent, type SseEvent } from '../sse.ts';
import type { OpenStream, OpenStreams } from '../streams.ts';
import type { BackendLink } from './backend-link.ts';
import { isResumableEventId, multiplexEventId } from './ids.ts';
import { rewriteEvent, rewriteForClient } from './routed.ts';
import type { AggregatedSession, SessionStream } from './session.ts';

const EVENT_STREAM = /^text\/event-stream/i;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 30_000;

/** Side effects of what a backend says, wherever it says it (list caches). */
export type BackendObserver = (session: AggregatedSession, message: JsonRpcMessage) => void;

/** The GET stream of one backend session, feeding the client's stream. */
class BackendStream extends Exchange {
  readonly #owner: ClientStream;
  readonly #link: BackendLink;
  #parser: SseParser | null = null;
  #status = 0;

  constructor(owner: ClientStream, link: BackendLink) {
    super(link.backend, link.metrics);
    this.#owner = owner;
    this.#link = link;
  }

  protected head(status: number, headers: string[]): boolean {
    this.#status = status;
    for (let i = 0; i < headers.length; i += 2) {
      if (headers[i]!.toLowerCase() === 'content-type' && EVENT_STREAM.test(headers[i + 1]!)) this.#parser = new SseParser();
    }
    return true;
  }

  protected data(chunk: Buffer): boolean {
    if (this.#parser === null || this.#status !== 200) return true;
    for (const event of this.#parser.push(chunk)) this.#owner.backendEvent(this.#link, event);
    return true;
  }

  protected end(): void {
    this.#owner.backendEnded(this.#link, this, this.#parser !== null && this.#status === 200 ? null : this.#status);
  }

  protected fail(_error: GatewayError): void {
    this.#owner.backendEnded(this.#link, this, null);
  }
}

export class ClientStream implements SessionStream, OpenStream {
  readonly standalone = true;
  readonly ctx: Context;
  readonly #session: AggregatedSession;
  readonly #links: ReadonlyMap<string, BackendLink>;
  readonly #streams: OpenStreams;
  readonly #observe: BackendObserver;
  readonly #positions: Map<number, string>;
  readonly #backends = new Map<number, BackendStream>();
  readonly #retries = new Map<number, number>();
  #closed = false;

  constructor(ctx: Context, session: AggregatedSession, links: ReadonlyMap<string, BackendLink>, streams: OpenStreams, observe: BackendObserver, positions: ReadonlyMap<number, string>) {
    this.ctx = ctx;
    this.#session = session;
    this.#links = links;
    this.#streams = streams;
    this.#observe = observe;
    this.#positions = new Map(positions);
  }

  /** Answers the client's GET and opens every backend's stream. */
  open(): void {
    const headers: Record<string, string> = {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      'mcp-session-id': this.#session.id,
      'x-request-id': this.ctx.requestId,
    };
    addCorsHeaders(headers, this.ctx.corsOrigin);
    this.ctx.res.writeHead(200, headers);
    this.ctx.res.flushHeaders();
    this.ctx.inflight = { cancel: () => this.close() };
    this.#streams.add(this);
    for (const name of this.#session.backends.keys()) {
      const link = this.#links.get(name);
      if (link !== undefined) void this.#connect(link);
    }
  }

  async #connect(link: BackendLink): Promise<void> {
    if (this.#closed) return;
    const backendSession = this.#session.backends.get(link.name)!;
    let headers: string[] | GatewayError;
    try {
      headers = await link.headers(this.ctx, backendSession, 'text/event-stream', this.#positions.get(link.index));
    } catch (err) {
      // A prepareBackend hook threw: that backend's stream stays closed; the others go on.
      this.ctx.log(err instanceof GatewayError ? err : new GatewayError('internal_error', `no GET stream to backend "${link.name}"`, { detail: String(err) }), err);
      return;
    }
    if (this.#closed || !Array.isArray(headers)) return;
    const stream = new BackendStream(this, link);
    this.#backends.set(link.index, stream);
    stream.dispatch(link.pool, 'GET', headers, null);
  }

  backendEvent(link: BackendLink, event: SseEvent): void {
    if (this.#closed) return;
    this.#retries.delete(link.index);
    const resumable = isResumableEventId(event.id);
    if (resumable) this.#positions.set(link.index, event.id!);
    if (event.data.length > 0) {
      try {
        this.#observe(this.#session, JSON.parse(event.data) as JsonRpcMessage);
      } catch {
        // not JSON: passed on as is
      }
    }
    const id = resumable ? multiplexEventId(this.#positions) : null;
    this.ctx.res.write(rewriteEvent(event, id, link.index, this.#session));
  }

  /** A message a backend sent on a request's stream that is not that request's (fan-out calls). */
  deliver(backendIndex: number, message: JsonRpcMessage): void {
    if (this.#closed) return;
    this.ctx.res.write(formatSseEvent({ event: 'message', data: JSON.stringify(rewriteForClient(backendIndex, message, this.#session)) }));
  }

  /**
   * A backend stream ended. `refusal` is the HTTP status when the backend refused the stream
   * (405: it has no GET stream; 404: the session is gone): then it is not reopened.
   */
  backendEnded(link: BackendLink, stream: BackendStream, refusal: number | null): void {
    if (this.#backends.get(link.index) === stream) this.#backends.delete(link.index);
    if (this.#closed || refusal === 405 || refusal === 404) return;
    const attempt = (this.#retries.get(link.index) ?? 0) + 1;
    this.#retries.set(link.index, attempt);
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (attempt - 1));
    setTimeout(() => void this.#connect(link), delay).unref();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const stream of this.#backends.values()) stream.cancel();
    this.#backends.clear();
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
    this.#streams.delete(this);
    if (this.#session.stream === this) this.#session.stream = null;
  }
}
