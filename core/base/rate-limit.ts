/**
 * Request budgets: how many requests one key (a client address, a user) may make in a window,
 * and how many all keys together may make, on rate-limiter-flexible's fixed windows. Kept in
 * this process, or in Redis so that every replica of the gateway counts against the same
 * budget. Which key a request has, and what a refusal answers, is the caller's.
 *
 * The per-key budget is taken first: a key past its own budget is refused without spending the
 * shared one, so one flooding key cannot use up what the others share.
 *
 * In memory, the keys counted are bounded (`maxKeys`, the least recently seen dropped first):
 * rate-limiter-flexible's own memory store keeps one record and one timer per key for a whole
 * window (534 bytes a key measured, 139 MiB of RSS for 200,000 addresses), so a flood from
 * many addresses would grow the heap with the flood; here it costs at most `maxKeys` entries.
 * A dropped key starts a new window: an attacker with more addresses than `maxKeys` gains
 * nothing the shared budget does not still bound.
 *
 * In Redis, a key's count is one Redis key for its window (rate-limiter-flexible's script). A key
 * once refused is refused in this process until its window ends without asking Redis again
 * (`inMemoryBlockOnConsumed`), and when Redis cannot answer (down, or silent for
 * REDIS_BUDGET_TIMEOUT_MS) the budget is kept in this process alone (its insurance limiter), so a
 * Redis outage neither lets a flood through, nor refuses everyone, nor holds requests.
 */
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** At most `maxTokens` requests in each window of `refillPeriodMs` (ToolHive's names). */
export interface RateBound {
  readonly maxTokens: number;
  readonly refillPeriodMs: number;
}

export interface BudgetBounds {
  /** For each key alone. */
  readonly perKey: RateBound;
  /** For every key together. */
  readonly shared: RateBound;
}

export type BudgetStore = { readonly type: 'memory' } | { readonly type: 'redis'; readonly client: Redis; readonly keyPrefix: string };

export interface BudgetRefusal {
  /** Which budget is spent: the key's own, or the one all keys share. */
  readonly scope: 'perKey' | 'shared';
  readonly bound: RateBound;
  /** Whole seconds until the window that refused ends (at least 1). */
  readonly retryAfterSeconds: number;
}

/** Keys counted in memory per budget, at most. */
export const MAX_KEYS = 50_000;

const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * rate-limiter-flexible's memory store with the same methods, its records in an LRU of at most
 * `max` keys and no timer each (a record past its window is a new window when next seen).
 */
class BoundedMemoryStorage {
  readonly #records: LRUCache<string, { value: number; expiresAt: number }>;

  constructor(max: number) {
    // maxSize (each record 1), not max: lru-cache allocates `max` slots up front, for every budget.
    this.#records = new LRUCache({ maxSize: max, sizeCalculation: () => 1 });
  }

  incrby(key: string, value: number, durationSec: number): RateLimiterRes {
    const record = this.#records.get(key);
    const now = Date.now();
    if (record === undefined || record.expiresAt <= now) return this.set(key, value, durationSec);
    record.value += value;
    return new RateLimiterRes(0, record.expiresAt - now, record.value, false);
  }

  set(key: string, value: number, durationSec: number): RateLimiterRes {
    this.#records.set(key, { value, expiresAt: Date.now() + durationSec * 1000 });
    return new RateLimiterRes(0, durationSec * 1000, value, true);
  }

  get(key: string): RateLimiterRes | null {
    const record = this.#records.get(key);
    const now = Date.now();
    return record === undefined || record.expiresAt <= now ? null : new RateLimiterRes(0, record.expiresAt - now, record.value, false);
  }

  delete(key: string): boolean {
    return this.#records.delete(key);
  }

  get size(): number {
    return this.#records.size;
  }
}

/** A RateLimiterMemory whose store is bounded (see the top). */
function memoryLimiter(bound: RateBound, keyPrefix: string, maxKeys: number): RateLimiterMemory {
  const limiter = new RateLimiterMemory({ points: bound.maxTokens, duration: seconds(bound.refillPeriodMs), keyPrefix });
  (limiter as unknown as { _memoryStorage: BoundedMemoryStorage })._memoryStorage = new BoundedMemoryStorage(maxKeys);
  return limiter;
}

/** How long a budget waits for Redis before it counts in this process instead. */
export const REDIS_BUDGET_TIMEOUT_MS = 250;

function limiter(bound: RateBound, name: string, store: BudgetStore, maxKeys: number): RateLimiterAbstract {
  if (store.type === 'memory') return memoryLimiter(bound, name, maxKeys);
  const insurance = memoryLimiter(bound, name, maxKeys);
  const shared = new RateLimiterRedis({
    storeClient: store.client,
    keyPrefix: `${store.keyPrefix}ratelimit:${name}`,
    points: bound.maxTokens,
    duration: seconds(bound.refillPeriodMs),
    // Refused once: refused here until the window ends, without a round trip per request.
    inMemoryBlockOnConsumed: bound.maxTokens + 1,
    // Redis down or reconnecting: this process's own count, at once (no command queued behind a reconnect).
    rejectIfRedisNotReady: true,
    insuranceLimiter: insurance,
  });
  // Redis connected but not answering (paused, a failover under way): the count is this process's
  // after REDIS_BUDGET_TIMEOUT_MS, so a budget never holds a request for the command timeout
  // (the request itself then meets the storage's own retryable 503, as it would without budgets).
  return new RLWrapperTimeouts({ limiter: shared, timeoutMs: REDIS_BUDGET_TIMEOUT_MS, insuranceLimiter: insurance }) as unknown as RateLimiterAbstract;
}

/** The refusal rate-limiter-flexible rejected with, or the error it is (a store that failed without insurance). */
function refusalOf(rejected: unknown, scope: BudgetRefusal['scope'], bound: RateBound): BudgetRefusal {
  if (!(rejected instanceof RateLimiterRes)) throw rejected;
  return { scope, bound, retryAfterSeconds: seconds(rejected.msBeforeNext) };
}

export class RequestBudget {
  readonly #perKey: RateLimiterAbstract;
  readonly #shared: RateLimiterAbstract;
  readonly #bounds: BudgetBounds;

  /** `name`: what is counted, unique per store (a Redis key prefix: `ratelimit:<name>:...`). */
  constructor(name: string, bounds: BudgetBounds, store: BudgetStore, maxKeys = MAX_KEYS) {
    this.#bounds = bounds;
    this.#perKey = limiter(bounds.perKey, `${name}:key`, store, maxKeys);
    this.#shared = limiter(bounds.shared, `${name}:shared`, store, maxKeys);
  }

  /** Spends one request of `key`'s budget and of the shared one: null when it may go on, else why not. */
  async take(key: string): Promise<BudgetRefusal | null> {
    try {
      await this.#perKey.consume(key);
    } catch (rejected) {
      return refusalOf(rejected, 'perKey', this.#bounds.perKey);
    }
    try {
      await this.#shared.consume('all');
    } catch (rejected) {
      return refusalOf(rejected, 'shared', this.#bounds.shared);
    }
    return null;
  }
}
