/**
 * Keep-alive connections to one backend origin: reused most-recent-first, opened on demand up to
 * a limit, with a FIFO queue beyond it (a pool for long-lived streams refuses instead, see
 * `refuseWhenFull`). One timer per pool (running only while there is work) enforces the
 * response-header deadline of each exchange, the whole-answer deadline of those that have one
 * (the gateway's own calls: a backend that sends a head and then nothing is not waited for
 * forever), and expires idle connections before the backend's own keep-alive limit would (so a
 * request never lands on a connection the backend is closing).
 */
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { LookupFunction } from '../http/address-guard.ts';
import { Connection, UpstreamError, type ConnectionOwner, type DialGuard } from './backend-connection.ts';
import { RequestHeads } from './request-heads.ts';
import type { BackendTransport, UpstreamHandler } from './transport.ts';

export interface PoolOptions {
  /** Maximum connections to this origin. */
  connections: number;
  /** How long an idle connection is kept, ms. */
  keepAliveMs: number;
  connectTimeoutMs: number;
  /**
   * A dispatch that finds every connection busy fails at once (PoolFullError) instead of
   * waiting: for long-lived streams, whose connections may not free for hours, so a queue would
   * only hold a request until its deadline.
   */
  refuseWhenFull?: boolean;
  /** The addresses it may dial (a registry-fed backend's, endpoint-guard.ts); none: any. */
  guard?: DialGuard | null;
  /** How the host name is resolved (dns.lookup's shape) when there is no guard; none: dns.lookup. */
  lookup?: LookupFunction;
}

/** A pool that refuses when full had all its connections in use. */
export class PoolFullError extends UpstreamError {
  readonly limit: number;
  constructor(limit: number) {
    super('EPOOL_FULL', `all ${limit} connections are in use`);
    this.limit = limit;
  }
}

interface Waiting {
  handler: UpstreamHandler;
  method: string;
  path: string;
  headers: readonly string[];
  body: Buffer | null;
  deadline: number;
  answerDeadline: number;
}

/** Margin kept below the backend's advertised keep-alive timeout. */
const HINT_MARGIN_MS = 1000;

export class Pool implements ConnectionOwner, BackendTransport {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  readonly authority: string;
  readonly connectTimeoutMs: number;
  readonly guard: DialGuard | null;
  readonly lookup: LookupFunction | undefined;
  readonly heads: RequestHeads;
  readonly #options: PoolOptions;
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();
  readonly #waiting: Waiting[] = [];
  #timer: NodeJS.Timeout | null = null;
  #sweepMs = 1000;
  /** What every dispatch fails with: the gateway shuts down, or the guard refused the host's IP address. */
  #shut: UpstreamError | null = null;

  constructor(origin: URL, options: PoolOptions) {
    this.tls = origin.protocol === 'https:';
    this.host = origin.hostname.startsWith('[') ? origin.hostname.slice(1, -1) : origin.hostname;
    this.port = origin.port === '' ? (this.tls ? 443 : 80) : Number(origin.port);
    this.authority = origin.host;
    this.heads = new RequestHeads(this.authority);
    this.connectTimeoutMs = options.connectTimeoutMs;
    this.#options = options;
    this.guard = options.guard ?? null;
    this.lookup = this.guard?.lookup ?? options.lookup;
    // An IP address is never looked up: it is judged here, once, and a refused one is never dialled.
    if (this.guard !== null && isIP(this.host) !== 0) this.#shut = this.guard.check(this.host, this.host);
  }

  /**
   * Sends a request (or queues it); the response, or the failure, reaches `handler`. Its head
   * must come within `timeoutMs`; with `answerTimeoutMs` (> 0), its whole answer within that,
   * both from now.
   */
  dispatch(handler: UpstreamHandler, method: string, path: string, headers: readonly string[], body: Buffer | null, timeoutMs: number, answerTimeoutMs = 0): void {
    const now = performance.now();
    const deadline = now + timeoutMs;
    const answerDeadline = answerTimeoutMs > 0 ? now + answerTimeoutMs : 0;
    const sweep = Math.max(10, Math.min(1000, Math.floor(Math.min(timeoutMs, answerTimeoutMs > 0 ? answerTimeoutMs : timeoutMs) / 4)));
    if (sweep < this.#sweepMs) {
      // A shorter deadline than any before: sweep more often.
      this.#sweepMs = sweep;
      if (this.#timer !== null) clearInterval(this.#timer);
      this.#timer = null;
    }
    this.#arm();
    if (this.#shut !== null) {
      handler.onError(this.#shut);
      return;
    }
    const connection = this.#reusable(now) ?? (this.#all.size < this.#options.connections ? this.#open() : null);
    if (connection === null) {
      if (this.#options.refuseWhenFull === true) {
        handler.onError(new PoolFullError(this.#options.connections));
        return;
      }
      this.#waiting.push({ handler, method, path, headers, body, deadline, answerDeadline });
      return;
    }
    connection.send(handler, method, path, headers, body, deadline, answerDeadline);
  }

  /**
   * What a dispatch would be refused with now, for a pool that refuses when full (null while a
   * connection is idle or may still be opened): lets a caller answer before it commits to a stream.
   */
  refusal(): PoolFullError | null {
    if (this.#options.refuseWhenFull !== true || this.#idle.length > 0 || this.#all.size < this.#options.connections) return null;
    return new PoolFullError(this.#options.connections);
  }

  /** Removes a queued request whose client went away. */
  cancel(handler: UpstreamHandler): void {
    const at = this.#waiting.findIndex((w) => w.handler === handler);
    if (at !== -1) this.#waiting.splice(at, 1);
  }

  /** The most recently used idle connection that is not about to expire. */
  #reusable(now: number): Connection | null {
    for (;;) {
      const connection = this.#idle.pop();
      if (connection === undefined) return null;
      if (now - connection.idleSince < this.#idleLimit(connection)) return connection;
      connection.destroy();
    }
  }

  #idleLimit(connection: Connection): number {
    const hint = connection.keepAliveHintMs;
    return Math.min(this.#options.keepAliveMs, hint > 2 * HINT_MARGIN_MS ? hint - HINT_MARGIN_MS : hint / 2);
  }

  #open(): Connection {
    const connection = new Connection(this);
    this.#all.add(connection);
    return connection;
  }

  release(connection: Connection): void {
    const next = this.#waiting.shift();
    if (next !== undefined) {
      connection.send(next.handler, next.method, next.path, next.headers, next.body, next.deadline, next.answerDeadline);
      return;
    }
    if (this.#shut !== null) {
      connection.destroy();
      return;
    }
    connection.idleSince = performance.now();
    this.#idle.push(connection);
  }

  discard(connection: Connection): void {
    this.#all.delete(connection);
    const at = this.#idle.lastIndexOf(connection);
    if (at !== -1) this.#idle.splice(at, 1);
    // A queued request may now get a connection of its own.
    if (this.#waiting.length > 0 && this.#shut === null && this.#all.size < this.#options.connections) {
      const next = this.#waiting.shift()!;
      this.#open().send(next.handler, next.method, next.path, next.headers, next.body, next.deadline, next.answerDeadline);
    }
  }

  #arm(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => this.#sweep(), this.#sweepMs);
    this.#timer.unref();
  }

  /** Deadlines and idle expiry; stops itself when the pool has nothing to watch. */
  #sweep(): void {
    const now = performance.now();
    for (const connection of this.#all) {
      if (connection.deadline !== 0 && connection.deadline <= now) {
        connection.fail(new UpstreamError('EHEADERS_TIMEOUT', 'no response headers in time'));
      } else if (connection.answerDeadline !== 0 && connection.answerDeadline <= now) {
        connection.fail(new UpstreamError('EANSWER_TIMEOUT', 'the answer did not end in time'));
      }
    }
    for (let i = this.#waiting.length - 1; i >= 0; i--) {
      const waiting = this.#waiting[i]!;
      if (waiting.deadline <= now || (waiting.answerDeadline !== 0 && waiting.answerDeadline <= now)) {
        this.#waiting.splice(i, 1);
        waiting.handler.onError(new UpstreamError('EHEADERS_TIMEOUT', 'no connection became free in time'));
      }
    }
    for (let i = this.#idle.length - 1; i >= 0; i--) {
      const connection = this.#idle[i]!;
      if (now - connection.idleSince >= this.#idleLimit(connection)) connection.destroy();
    }
    if (this.#all.size === 0 && this.#waiting.length === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  get size(): { open: number; idle: number; waiting: number } {
    return { open: this.#all.size, idle: this.#idle.length, waiting: this.#waiting.length };
  }

  close(): void {
    this.#shut = new UpstreamError('ECONNREFUSED', 'the gateway is shutting down');
    for (const waiting of this.#waiting.splice(0)) waiting.handler.onError(this.#shut);
    for (const connection of [...this.#all]) {
      if (connection.handler === null) connection.destroy();
    }
    if (this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }
}
