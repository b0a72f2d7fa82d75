/**
 * Connections to backends: per backend origin, one keep-alive pool for requests and one for
 * long-lived GET streams (pool.ts), and the mapping of upstream failures to what the client is
 * told. The stream pool is apart so that streams never starve requests: a GET stream holds its
 * connection for as long as the client keeps it open, and one client can open hundreds; beyond
 * the stream limit a stream is refused at once, while every request still finds a connection.
 *
 * Measured choice (core/README.md, Design): a small HTTP/1.1 client on Node's native llhttp binding
 * costs less CPU per request than undici's Pool.dispatch with a raw handler, which costs about
 * half of http.request + pipe or http-proxy; all three stream SSE chunk by chunk.
 */
import type { BackendInfo } from '../plugin-api/backend.ts';
import { formatSize } from '../config/size.ts';
import { GatewayError } from '../base/errors.ts';
import { Pool, PoolFullError } from './pool.ts';

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'host unreachable',
  ECONNECT_TIMEOUT: 'connect timeout',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  EPROTO: 'protocol error',
  EUNSAFE_HEADER: 'a header value was not safe to send',
};

const UNAVAILABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNECT_TIMEOUT']);

/** Maps a failure of the exchange with `backend` to what the client is told. */
export function upstreamError(backend: BackendInfo, err: { code?: string; message?: string }): GatewayError {
  const code = err.code ?? '';
  const options = { detail: `${code} ${err.message ?? ''}`, extra: { backend: backend.name } };
  if (err instanceof PoolFullError) {
    return new GatewayError('stream_limit', `backend "${backend.name}" has reached the gateway's limit of ${err.limit} open streams to it; try again later`, {
      ...options,
      extra: { backend: backend.name, limit: err.limit },
    });
  }
  if (code === 'EHEADERS_TIMEOUT') {
    return new GatewayError('backend_timeout', `backend "${backend.name}" did not answer within ${backend.timeoutMs} ms`, options);
  }
  if (code === 'EANSWER_TIMEOUT') {
    return new GatewayError('backend_timeout', `backend "${backend.name}" did not complete its answer within ${backend.answerTimeoutMs} ms (operational.timeouts)`, options);
  }
  const reason = REASONS[code] ?? (code.startsWith('HPE_') ? 'invalid HTTP response' : code === '' ? 'error' : code);
  if (UNAVAILABLE.has(code)) return new GatewayError('backend_unavailable', `backend "${backend.name}" is unavailable (${reason})`, options);
  return new GatewayError('backend_error', `backend "${backend.name}" failed (${reason})`, options);
}

/**
 * A backend's answer (`an answer`, one event of its stream, the pages of a list) grew past
 * `operational.maxBackendResponseSize`: what its request is failed with, naming the backend and
 * the bound.
 */
export function answerTooLarge(backend: BackendInfo, what: string): GatewayError {
  const limit = backend.maxResponseBytes;
  return new GatewayError('backend_error', `backend "${backend.name}" sent ${what} larger than ${formatSize(limit)} (operational.maxBackendResponseSize)`, {
    extra: { backend: backend.name, limit },
  });
}

export interface UpstreamOptions {
  /** Maximum connections per backend origin for requests (POST, DELETE); more wait in a queue. */
  connections: number;
  /** Maximum long-lived GET streams per backend origin, on connections of their own; more are refused (503). */
  streams: number;
  /** How long an idle pooled connection is kept. */
  keepAliveMs: number;
  connectTimeoutMs: number;
}

const DEFAULTS: UpstreamOptions = { connections: 256, streams: 256, keepAliveMs: 30_000, connectTimeoutMs: 5_000 };

/** The two keep-alive pools of every backend origin, created at start. */
export class Upstreams {
  readonly #pools = new Map<string, Pool>();
  readonly #streamPools = new Map<string, Pool>();
  readonly #options: UpstreamOptions;

  constructor(options: Partial<UpstreamOptions> = {}) {
    this.#options = { ...DEFAULTS, ...options };
  }

  /** The pool for requests: a request waits for a connection (until its deadline) when all are busy. */
  pool(backend: BackendInfo): Pool {
    let pool = this.#pools.get(backend.origin);
    if (pool === undefined) {
      pool = new Pool(new URL(backend.origin), this.#options);
      this.#pools.set(backend.origin, pool);
    }
    return pool;
  }

  /** The pool for GET streams: `streams` connections, and a stream beyond them is refused at once. */
  streamPool(backend: BackendInfo): Pool {
    let pool = this.#streamPools.get(backend.origin);
    if (pool === undefined) {
      const { streams, keepAliveMs, connectTimeoutMs } = this.#options;
      pool = new Pool(new URL(backend.origin), { connections: streams, keepAliveMs, connectTimeoutMs, refuseWhenFull: true });
      this.#streamPools.set(backend.origin, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    for (const pool of [...this.#pools.values(), ...this.#streamPools.values()]) pool.close();
    this.#pools.clear();
    this.#streamPools.clear();
  }
}
