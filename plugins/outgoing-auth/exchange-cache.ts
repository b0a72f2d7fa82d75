/**
 * The cache of exchanged tokens, shared by every tokenExchange backend of the gateway.
 *
 *  - Key: SHA-256 of the subject token and everything that shapes the exchange (token URL, client
 *    id, audience, scopes, subject token type). Two users, two audiences, two STSs never share an
 *    entry, and no token is kept as a key.
 *  - Lifetime: the exchanged token's own (`expires_in`, else its JWT `exp`), minus the skew, so
 *    that no backend receives a token about to expire; half its lifetime when that is shorter
 *    than twice the skew; at most an hour. An answer that says nothing gets the configured
 *    default lifetime.
 *  - Bounded (LRU, `maxEntries`, and 64 MiB). Failures are never kept: the next request asks again.
 *  - Concurrent requests for one key share one exchange (single flight).
 *
 * A hit costs one map lookup and one clock read, synchronously: the request path meets no
 * promise. Each entry keeps the instant it ends and a hit compares it with the clock; lru-cache
 * only bounds the count and the bytes. Its own per-entry TTL made every lookup ~600 instructions
 * (two clock reads and its staleness bookkeeping; callgrind, bench/load) on every request of a
 * tokenExchange backend.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { Registry } from 'prom-client';
import {
  type CounterChild,
  CounterFamily,
  GatewayError,
  type HistogramChild,
  HistogramFamily,
  type TokenExchangeCacheConfig,
} from '@gatehouse-mcp/gateway';
import { causeOf, type ExchangeFailure } from './errors.ts';
import type { ExchangedToken } from './sts-client.ts';

/**
 * The longest an exchanged token is kept, whatever its lifetime: a revocation at the STS is seen
 * within the hour, and an answer with a lifetime of years does not pin an entry.
 */
const MAX_CACHE_MS = 3_600_000;
/** Memory bound besides the entry count: tokens may be up to 16 KiB each. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024;

const EXCHANGE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The metrics of the cache: hits, misses, exchange latency, failures by cause. */
export class ExchangeMetrics {
  readonly #lookups = new CounterFamily('gatehouse_token_exchange_cache_total', 'Token exchange cache lookups, by result (hit, miss, shared: joined an exchange under way)', ['result']);
  readonly #latency = new HistogramFamily('gatehouse_token_exchange_seconds', 'Time of RFC 8693 token exchanges, successful or not', [], EXCHANGE_BUCKETS);
  readonly #failures = new CounterFamily('gatehouse_token_exchange_failures_total', 'Failed token exchanges, by cause', ['cause']);
  readonly hit: CounterChild;
  readonly miss: CounterChild;
  readonly shared: CounterChild;
  readonly latency: HistogramChild;

  constructor(registry: Registry | null) {
    this.hit = this.#lookups.child('hit');
    this.miss = this.#lookups.child('miss');
    this.shared = this.#lookups.child('shared');
    this.latency = this.#latency.child();
    if (registry !== null) for (const family of [this.#lookups, this.#latency, this.#failures]) registry.registerMetric(family as never);
  }

  failed(cause: ExchangeFailure): void {
    this.#failures.child(cause).value++;
  }
}

interface Entry {
  readonly token: string;
  /** When the entry ends (performance.now(), ms: a monotonic clock, and one read cheaper than Date.now's call into the runtime). */
  readonly until: number;
}

export class ExchangeCache {
  readonly #tokens: LRUCache<string, Entry>;
  readonly #pending = new Map<string, Promise<string>>();
  readonly #config: TokenExchangeCacheConfig;
  readonly metrics: ExchangeMetrics;

  constructor(config: TokenExchangeCacheConfig, metrics: ExchangeMetrics) {
    this.#config = config;
    this.metrics = metrics;
    // No timer: an expired entry is dropped when it is read, or pushed out by the bound.
    this.#tokens = new LRUCache({
      max: config.maxEntries,
      maxSize: MAX_CACHE_BYTES,
      sizeCalculation: (entry, key) => entry.token.length + key.length,
    });
  }

  /** The cache key of `subject` exchanged in the way `shape` describes (see `exchangeShape`). */
  static key(subject: string, shape: string): string {
    return createHash('sha256').update(subject).update(shape).digest('base64url');
  }

  /** The cached token of `key`, or undefined (counted as a hit or nothing: a miss is counted by `obtain`). */
  get(key: string): string | undefined {
    const entry = this.#tokens.get(key);
    if (entry === undefined) return undefined;
    if (performance.now() >= entry.until) {
      this.#tokens.delete(key);
      return undefined;
    }
    this.metrics.hit.value++;
    return entry.token;
  }

  /**
   * The token of `key` from one exchange: the one under way for that key, or `exchange()` run
   * now. Its result is kept for its lifetime; a failure is counted and thrown, never kept.
   */
  obtain(key: string, exchange: () => Promise<ExchangedToken>): Promise<string> {
    const pending = this.#pending.get(key);
    if (pending !== undefined) {
      this.metrics.shared.value++;
      return pending;
    }
    this.metrics.miss.value++;
    const started = performance.now();
    const run = exchange().then(
      (exchanged) => {
        this.metrics.latency.observe((performance.now() - started) / 1000);
        const ttl = this.cacheTime(exchanged.lifetimeMs);
        if (ttl >= 1) this.#tokens.set(key, { token: exchanged.accessToken, until: performance.now() + Math.floor(ttl) });
        return exchanged.accessToken;
      },
      (err: unknown) => {
        this.metrics.latency.observe((performance.now() - started) / 1000);
        this.metrics.failed(err instanceof GatewayError ? causeOf(err) : 'unavailable');
        throw err;
      },
    );
    const settled = run.finally(() => this.#pending.delete(key));
    // The caller handles the rejection of `settled`; this copy must not be reported as unhandled.
    settled.catch(() => undefined);
    this.#pending.set(key, settled);
    return settled;
  }

  /** How long a token living `lifetimeMs` from now stays in the cache. */
  cacheTime(lifetimeMs: number | null): number {
    const lifetime = lifetimeMs ?? this.#config.defaultLifetimeMs;
    if (lifetime <= 0) return 0;
    const skew = this.#config.expirySkewMs;
    return Math.min(MAX_CACHE_MS, lifetime > 2 * skew ? lifetime - skew : lifetime / 2);
  }

  clear(): void {
    this.#tokens.clear();
  }
}

/** What, besides the subject, makes two exchanges different: part of the cache key. */
export function exchangeShape(exchange: { tokenUrl: string; clientId: string; audience: string; scopes: readonly string[]; subjectTokenType: string }): string {
  // NUL cannot occur in any of the parts (they are header-safe or URL text), so the joined form is unambiguous.
  return ['', exchange.tokenUrl, exchange.clientId, exchange.audience, exchange.scopes.join(' '), exchange.subjectTokenType].join('\0');
}
