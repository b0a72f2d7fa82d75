/**
 * Pooled keep-alive connections to backends (one undici Pool per backend origin), the headers a
 * backend receives, and the classification of upstream failures.
 *
 * Measured choice (bench/README.md, PERF-NOTES.md): undici `Pool.dispatch` with a raw handler
 * object costs about half the CPU per request of `http.request` + pipe or of http-proxy, and
 * streams SSE chunk by chunk. The legacy handler interface (onConnect/onHeaders/onData/
 * onComplete/onError) is the one undici's core calls directly; the newer one is wrapped.
 */
import type { IncomingMessage } from 'node:http';
import { Pool } from 'undici';
import type { BackendInfo } from './backend.ts';
import { GatewayError } from './errors.ts';
import type { BackendMetrics } from './observe/metrics.ts';

/** Request headers that never travel to a backend. */
const NOT_FORWARDED = new Set([
  // Hop-by-hop (RFC 9110 §7.6.1): they describe the client's connection, not the request.
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  // The backend gets its own authority as Host (undici writes it from the pool's origin).
  'host',
  // The client's credentials are for the gateway: a backend gets only what prepareBackend sets.
  'authorization',
  'cookie',
  // Origin was checked by the gateway; a backend doing its own rebinding check must not see a
  // browser origin it was never configured for.
  'origin',
  // Recomputed for the body actually sent.
  'content-length',
  'expect',
]);

/**
 * The headers to forward from the client's request, as the flat array undici writes as is.
 * `stripEncoding` drops Accept-Encoding when the gateway must read the response body itself.
 */
export function forwardHeaders(req: IncomingMessage, requestId: string, stripEncoding: boolean): string[] {
  const raw = req.rawHeaders;
  const out: string[] = [];
  let connectionTokens: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (NOT_FORWARDED.has(name)) {
      if (name === 'connection') connectionTokens = raw[i + 1];
      continue;
    }
    if (name === 'x-request-id' || (stripEncoding && name === 'accept-encoding')) continue;
    out.push(name, raw[i + 1]!);
  }
  if (connectionTokens !== undefined) {
    // Headers the client listed in Connection are hop-by-hop too (e.g. "Connection: close, x-foo").
    for (const token of connectionTokens.split(',')) {
      const name = token.trim().toLowerCase();
      if (name === 'close' || name === 'keep-alive' || name === '') continue;
      for (let i = out.length - 2; i >= 0; i -= 2) if (out[i] === name) out.splice(i, 2);
    }
  }
  out.push('x-request-id', requestId);
  return out;
}

/** Maps a failure of the exchange with `backend` to what the client is told. */
export function upstreamError(backend: BackendInfo, err: unknown): GatewayError {
  const code = (err as { code?: string }).code ?? '';
  const message = (err as Error).message ?? String(err);
  switch (code) {
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new GatewayError('backend_timeout', `backend "${backend.name}" did not answer within ${backend.timeoutMs} ms`, {
        detail: message,
        extra: { backend: backend.name },
      });
    case 'UND_ERR_BODY_TIMEOUT':
      return new GatewayError('backend_timeout', `backend "${backend.name}" stopped sending its response`, {
        detail: message,
        extra: { backend: backend.name },
      });
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new GatewayError('backend_unavailable', `backend "${backend.name}" is unavailable (${describe(code)})`, {
        detail: message,
        extra: { backend: backend.name },
      });
    default:
      return new GatewayError('backend_error', `backend "${backend.name}" failed (${describe(code)})`, {
        detail: `${code} ${message}`,
        extra: { backend: backend.name },
      });
  }
}

function describe(code: string): string {
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'connect timeout';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection reset';
    case 'UND_ERR_ABORTED':
      return 'aborted';
    default:
      return code === '' ? 'error' : code;
  }
}

export interface UpstreamOptions {
  /** Maximum connections per backend origin. */
  connections: number;
  /** How long an idle pooled connection is kept. */
  keepAliveMs: number;
  connectTimeoutMs: number;
}

const DEFAULTS: UpstreamOptions = { connections: 256, keepAliveMs: 30_000, connectTimeoutMs: 5_000 };

/** One keep-alive pool per backend origin, created at start. */
export class Upstreams {
  readonly #pools = new Map<string, Pool>();
  readonly #options: UpstreamOptions;

  constructor(options: Partial<UpstreamOptions> = {}) {
    this.#options = { ...DEFAULTS, ...options };
  }

  pool(backend: BackendInfo): Pool {
    let pool = this.#pools.get(backend.origin);
    if (pool === undefined) {
      pool = new Pool(backend.origin, {
        connections: this.#options.connections,
        pipelining: 1,
        keepAliveTimeout: this.#options.keepAliveMs,
        keepAliveMaxTimeout: this.#options.keepAliveMs,
        connect: { timeout: this.#options.connectTimeoutMs },
      });
      this.#pools.set(backend.origin, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.allSettled(pools.map((pool) => pool.destroy()));
  }
}

/**
 * One request to a backend, as an undici raw dispatch handler. Subclasses decide what happens to
 * the response (`head`, `data`, `end`, `fail`); this class wires the pool, the abort, the timing
 * and the error classification. One object per request, no closures.
 */
export abstract class Exchange {
  readonly backend: BackendInfo;
  readonly metrics: BackendMetrics;
  readonly startedAt: number;
  #abort: ((err?: Error) => void) | null = null;
  /** True once the client went away (or the gateway closed the stream): nothing more is written. */
  cancelled = false;

  constructor(backend: BackendInfo, metrics: BackendMetrics) {
    this.backend = backend;
    this.metrics = metrics;
    this.startedAt = performance.now();
  }

  dispatch(pool: Pool, method: string, headers: string[], body: Buffer | null): void {
    pool.dispatch(
      {
        path: this.backend.path,
        method,
        headers,
        body,
        headersTimeout: this.backend.timeoutMs,
        // SSE streams may be idle for long: only the wait for headers is bounded.
        bodyTimeout: 0,
      },
      this,
    );
  }

  /** The client is gone (or the gateway is shutting the stream): stop the backend exchange. */
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.#abort?.();
  }

  // ---- undici's handler interface ----

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.cancelled) abort();
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    this.metrics.latency((performance.now() - this.startedAt) / 1000);
    this.metrics.outcome('ok');
    if (this.cancelled) return false;
    return this.head(status, rawHeaders, resume);
  }

  onData(chunk: Buffer): boolean {
    if (this.cancelled) return false;
    return this.data(chunk);
  }

  onComplete(): void {
    if (!this.cancelled) this.end();
  }

  onError(err: Error): void {
    if (this.cancelled) {
      this.metrics.outcome('aborted');
      return;
    }
    const error = upstreamError(this.backend, err);
    this.metrics.outcome(error.code === 'backend_timeout' ? 'timeout' : error.code === 'backend_unavailable' ? 'unavailable' : 'error');
    this.fail(error);
  }

  protected abstract head(status: number, rawHeaders: Buffer[], resume: () => void): boolean;
  protected abstract data(chunk: Buffer): boolean;
  protected abstract end(): void;
  protected abstract fail(error: GatewayError): void;
}
