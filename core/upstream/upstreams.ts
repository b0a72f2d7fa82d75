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
import type { Logger } from 'pino';
import type { BackendInfo } from '../plugin-api/backend.ts';
import { formatSize } from '../config/size.ts';
import { GatewayError } from '../base/errors.ts';
import type { LookupFunction } from '../http/address-guard.ts';
import { HopMark } from '../http/hop-mark.ts';
import { AddressRefusedError, EndpointGuard } from './endpoint-guard.ts';
import { Pool, PoolFullError, type PoolOptions } from './pool.ts';
import type { BackendTransport } from './transport.ts';
import type { ChannelBackends } from './channel/channel-backends.ts';

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
  if (err instanceof AddressRefusedError) {
    // The client is told the class of address, not the address (what the backend's name resolves to is the operator's to know).
    return new GatewayError('backend_unavailable', `backend "${backend.name}" is unavailable: it is at ${err.reason}`, { ...options, detail: err.message });
  }
  if (err instanceof PoolFullError) {
    return new GatewayError('stream_limit', `backend "${backend.name}" has reached the gateway's limit of ${err.limit} open streams to it; try again later`, {
      ...options,
      extra: { backend: backend.name, limit: err.limit },
    });
  }
  if (code.startsWith('ECHANNEL')) {
    // A stdio or SSE backend's channel: the message is the reason, worded to follow the name.
    return new GatewayError(code === 'ECHANNEL_UNAVAILABLE' ? 'backend_unavailable' : 'backend_error', `backend "${backend.name}" ${err.message ?? 'failed'}`, options);
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
  /**
   * How backend host names are resolved, in `dns.lookup`'s shape (default: dns.lookup): for code
   * with a resolver of its own, and tests. A registry-fed backend's answers still pass its guard.
   */
  lookup?: LookupFunction;
}

const DEFAULTS: UpstreamOptions = { connections: 256, streams: 256, keepAliveMs: 30_000, connectTimeoutMs: 5_000 };

/** What the connections to backends are given by the server they belong to. */
export interface UpstreamContext {
  /** Where a guard's refusals are told (once per backend and class of address). */
  readonly log?: Logger | null;
  /** The gateway's entry in Via, which every request to a backend carries (http/hop-mark.ts); a new one when not given. */
  readonly hops?: HopMark;
  /** The stdio and SSE backends' transports, which outlive a reload (channel/channel-backends.ts); none: such a backend is refused. */
  readonly channels?: ChannelBackends | null;
}

/**
 * The two keep-alive pools of every backend origin, created at start. A backend with an endpoint
 * policy (a registry's server) has pools of its own, whose every connect its guard checks
 * (endpoint-guard.ts); the others share their origin's pools, unguarded.
 */
export class Upstreams {
  /** The gateway's entry in Via: the requests written to these backends carry it (backend-link.ts, transparent-endpoint.ts). */
  readonly hops: HopMark;
  readonly #pools = new Map<string, Pool>();
  readonly #streamPools = new Map<string, Pool>();
  /** The guard of each backend with an endpoint policy, by name: one for its two pools (its refusals are logged once). */
  readonly #guards = new Map<string, EndpointGuard>();
  /** The channel backends' transports this generation holds, by name: released when it closes. */
  readonly #channelTransports = new Map<string, BackendTransport>();
  readonly #channels: ChannelBackends | null;
  readonly #options: UpstreamOptions;
  readonly #log: Logger | null;

  constructor(options: Partial<UpstreamOptions> = {}, context: UpstreamContext = {}) {
    this.#options = { ...DEFAULTS, ...options };
    this.#log = context.log ?? null;
    this.#channels = context.channels ?? null;
    this.hops = context.hops ?? new HopMark();
  }

  /**
   * How requests reach `backend`. Over streamable HTTP: its origin's pool, where a request waits
   * for a connection (until its deadline) when all are busy.
   */
  requests(backend: BackendInfo): BackendTransport {
    if (backend.transport.kind !== 'streamable-http') return this.#channelOf(backend);
    return this.#poolOf(this.#pools, backend, this.#options);
  }

  /**
   * How GET streams reach `backend`. Over streamable HTTP: a pool of `streams` connections apart
   * from the requests', and a stream beyond them is refused at once.
   */
  streams(backend: BackendInfo): BackendTransport {
    if (backend.transport.kind !== 'streamable-http') return this.#channelOf(backend);
    const { streams, keepAliveMs, connectTimeoutMs } = this.#options;
    return this.#poolOf(this.#streamPools, backend, { connections: streams, keepAliveMs, connectTimeoutMs, refuseWhenFull: true });
  }

  /** A stdio or SSE backend's transport: one for its requests and streams alike (it has no connections to keep apart). */
  #channelOf(backend: BackendInfo): BackendTransport {
    let transport = this.#channelTransports.get(backend.name);
    if (transport === undefined) {
      if (this.#channels === null) throw new Error(`backend "${backend.name}" is reached over ${backend.transport.kind}, and these upstreams have no channel backends`);
      transport = this.#channels.acquire(backend);
      this.#channelTransports.set(backend.name, transport);
    }
    return transport;
  }

  #poolOf(pools: Map<string, Pool>, backend: BackendInfo, options: PoolOptions): Pool {
    const guarded = backend.endpointPolicy !== null;
    // A guarded backend's key holds its name (a newline: in no origin), so it never shares an unguarded pool.
    const key = guarded ? `${backend.name}\n${backend.origin}` : backend.origin;
    let pool = pools.get(key);
    if (pool === undefined) {
      const lookup = this.#options.lookup;
      pool = new Pool(new URL(backend.origin), guarded ? { ...options, guard: this.#guard(backend) } : lookup === undefined ? options : { ...options, lookup });
      pools.set(key, pool);
    }
    return pool;
  }

  #guard(backend: BackendInfo): EndpointGuard {
    let guard = this.#guards.get(backend.name);
    if (guard === undefined) {
      guard = new EndpointGuard(backend.name, backend.endpointPolicy!, this.#log, this.#options.lookup);
      this.#guards.set(backend.name, guard);
    }
    return guard;
  }

  async close(): Promise<void> {
    for (const pool of [...this.#pools.values(), ...this.#streamPools.values()]) pool.close();
    this.#pools.clear();
    this.#streamPools.clear();
    const held = [...this.#channelTransports.values()];
    this.#channelTransports.clear();
    await Promise.all(held.map((transport) => this.#channels!.release(transport)));
  }
}
