/**
 * Builds the session machinery of a group (group.ts) as an aggregated endpoint, or as the era
 * bridge of a transparent endpoint: one link per backend (pooled connection, metrics, compiled
 * prepareBackend hooks), the health monitor, and the session store — in memory, or Redis (plain
 * or Sentinel) so that several gateway processes serve one set of sessions.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BackendInfo } from '../../plugin-api/backend.ts';
import type { Chain } from '../../server/chain.ts';
import type { VmcpConfig } from '../../config/vmcp-types.ts';
import type { GatewayMetrics } from '../../observe/metrics.ts';
import { createRedisClient, waitReady } from '../../store/redis.ts';
import type { Upstreams } from '../../upstream/upstreams.ts';
import type { OpenStreams } from '../streams.ts';
import { BackendLink } from './backend-link.ts';
import { AggregatedEndpoint } from './aggregated-endpoint.ts';
import { EraBridge } from './era-bridge.ts';
import type { SessionEnder, ShownCarrier } from './group.ts';
import { HealthMonitor } from './health.ts';
import { MemorySessionStore } from './memory-session-store.ts';
import { RedisSessionStore } from './redis-session-store.ts';
import { LocalRelay, RedisRelay, type Relay } from './relay.ts';
import { sessionTag, type SessionStore } from './session-store.ts';
import { needsAggregation } from '../../config/aggregation-config.ts';
import type { RateLimits } from '../rate-limits.ts';

export interface AggregatedDeps {
  config: VmcpConfig;
  path: string;
  backends: readonly BackendInfo[];
  upstreams: Upstreams;
  chain: Chain;
  metrics: GatewayMetrics;
  streams: OpenStreams;
  log: Logger;
  /** Sessions shared with other generations of the same server (a reload): not closed with this one. */
  storage?: SessionStorage;
  /** Backends earlier configurations had and this one has not (reload). */
  removedBackends?: readonly string[];
  /**
   * Whether this is a transparent endpoint's era bridge, not an aggregated endpoint; unset: when
   * the group is one backend with no tool configuration.
   */
  bridge?: boolean;
  /** `spec.config.rateLimiting` on the process's buckets (null or unset: none). */
  limits?: RateLimits | null;
}

/**
 * Where sessions live, created once per process and kept across reloads: the store, the relay,
 * and which endpoint ends the backend sessions of a session the memory store expires.
 */
export interface SessionStorage {
  readonly store: SessionStore;
  readonly relay: Relay;
  /** The sessions now serving: the memory store's expiry ends backend sessions through them. */
  serve(sessions: SessionEnder): void;
  /**
   * Whether every session the store ends without a DELETE (expired, evicted) reaches the serving
   * sessions through `serve`: the in-memory store's do; Redis's expiry is silent, so a replica's
   * live sessions keep a time to live of their own.
   */
  readonly reportsEnds: boolean;
  close(): Promise<void>;
  /** The store's Redis connection and key prefix (other state the replicas share rides on it: rate limits); unset in memory. */
  readonly redis?: { readonly client: Redis; readonly keyPrefix: string };
}

export interface Aggregated {
  /** An aggregated group's endpoint, or a transparent endpoint's era bridge (one backend). */
  served: { readonly endpoint: AggregatedEndpoint; readonly bridge: null } | { readonly endpoint: null; readonly bridge: EraBridge };
  /** What ends the backend sessions of an expired session (the one of the two above). */
  sessions: SessionEnder & ShownCarrier;
  health: HealthMonitor;
  /** Closes the store's connection (Redis). */
  close(): Promise<void>;
}

const REDIS_READY_MS = 10_000;

/** The session store and relay of `config.session.storage` (Redis: connected and subscribed). */
export async function createSessionStorage(config: VmcpConfig, log: Logger): Promise<SessionStorage> {
  let serving: SessionEnder | null = null;
  let store: SessionStore;
  let relay: Relay;
  let close = async (): Promise<void> => {};
  let redis: SessionStorage['redis'];
  const storage = config.session.storage;
  if (storage.type === 'redis') {
    const client = createRedisClient(storage.redis, log, `vmcp-${config.name}`);
    redis = { client, keyPrefix: storage.redis.keyPrefix };
    try {
      await waitReady(client, REDIS_READY_MS);
    } catch (err) {
      client.disconnect();
      throw err;
    }
    store = new RedisSessionStore(client, {
      ttlMs: config.session.ttlMs,
      maxPerOwner: config.session.maxSessionsPerPrincipal,
      maxBytesPerOwner: config.session.maxSessionsBytesPerPrincipal,
      keyPrefix: storage.redis.keyPrefix,
      log,
    });
    // The replicas sharing these sessions tell each other about the calls one of them holds.
    const redisRelay = new RedisRelay(client, storage.redis.keyPrefix, log);
    relay = redisRelay;
    try {
      await redisRelay.start();
    } catch (err) {
      client.disconnect();
      throw err;
    }
    close = async () => {
      await redisRelay.close();
      await client.quit().catch(() => client.disconnect());
    };
  } else {
    const memory = new MemorySessionStore({
      max: config.session.maxSessions,
      maxPerOwner: config.session.maxSessionsPerPrincipal,
      maxBytesPerOwner: config.session.maxSessionsBytesPerPrincipal,
      ttlMs: config.session.ttlMs,
      log,
      onExpire: (record, reason) => {
        log.info({ session: sessionTag(record.id), reason }, 'aggregated session ended without DELETE: closing its backend sessions');
        void serving?.endBackends(null, record);
      },
    });
    store = memory;
    relay = new LocalRelay();
    close = () => memory.close();
  }

  return { store, relay, close, serve: (sessions) => (serving = sessions), reportsEnds: redis === undefined, ...(redis === undefined ? {} : { redis }) };
}

export async function createAggregated(deps: AggregatedDeps): Promise<Aggregated> {
  const { config, log } = deps;
  const links = deps.backends.map((backend, i) => new BackendLink(i, backend, deps.upstreams, deps.metrics.backend(backend.name), deps.chain));
  const failure = config.failureHandling;
  const health = new HealthMonitor(links, failure.healthCheckIntervalMs, failure.unhealthyThreshold, log.child({ component: 'health' }));
  const storage = deps.storage ?? (await createSessionStorage(config, log));
  const { store, relay } = storage;
  const close = deps.storage === undefined ? () => storage.close() : async (): Promise<void> => {};

  const group = {
    name: config.name,
    links,
    chain: deps.chain,
    streams: deps.streams,
    aggregation: config.aggregation,
    session: config.session,
    failure,
    store,
    health,
    relay,
    log,
    localExpiry: !storage.reportsEnds,
    removedBackends: deps.removedBackends ?? [],
    limits: deps.limits ?? null,
  };
  // One backend, no tool configuration: a transparent endpoint, whose era bridge this is (generation.ts).
  const served = !(deps.bridge ?? !needsAggregation(deps.backends.length, config.aggregation, config.registry !== null))
    ? { endpoint: new AggregatedEndpoint({ ...group, path: deps.path, maxBodyBytes: config.server.maxBodyBytes }), bridge: null }
    : { endpoint: null, bridge: new EraBridge(group) };
  const sessions = served.endpoint ?? served.bridge;
  if (deps.storage === undefined) storage.serve(sessions);
  return { served, sessions, health, close };
}
