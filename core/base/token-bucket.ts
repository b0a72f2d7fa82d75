/**
 * Token buckets (ToolHive's `rateLimiting` semantics): a bucket holds at most `maxTokens` tokens
 * and refills continuously, from empty to full in `refillPeriod` (maxTokens / refillPeriod a
 * second); a request takes one token from every bucket that applies to it, or from none: when one
 * of them is empty the request is refused and the others keep their tokens, so a request a
 * per-tool bucket refuses spends nothing of the user's or the shared one. A refusal says when the
 * bucket that refused holds a token again.
 *
 * Why token buckets and not rate-limiter-flexible's fixed windows (base/rate-limit.ts, which the
 * authorization server's endpoint budgets use): rate-limiter-flexible has no token bucket (its
 * BurstyRateLimiter is two fixed windows), and a fixed window both lets 2 × maxTokens through
 * around a window's edge and makes a refused client wait for the whole rest of the window (up to
 * refillPeriod), where a bucket lets it go on at the refill rate, one token at a time. ToolHive's
 * field names promise a bucket. Both stores are small enough to own: a record per key in memory,
 * and one Lua script in Redis. A memory check costs about what a fixed window does (bench/core/
 * base/token-bucket.bench.ts measures both).
 *
 * In memory, records live in one LRU of at most `maxKeys` keys (a key dropped for newer ones is a
 * full bucket when seen again: a flood of identities costs a bounded store; the shared buckets
 * still bound what they get through).
 *
 * In Redis, a bucket is one hash (`t`: tokens, `ts`: when, Redis' own clock, so the replicas'
 * clocks do not matter) that expires once it would be full again; one script refills and takes
 * every bucket of a request atomically, so the replicas sharing the Redis share the buckets.
 * A key refused by Redis is refused in this process until it holds a token again, without asking
 * Redis (a looping client costs no round trip per request). When Redis cannot answer (not
 * ready, an error, or silent for REDIS_BUCKET_TIMEOUT_MS) the request is counted in this
 * process's memory buckets instead, and so are the requests of the next REDIS_BUCKET_RETRY_MS
 * (a silent Redis holds one request for its timeout, not every one): an outage neither opens the
 * limits nor closes them, nor holds requests.
 */
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

/** At most `maxTokens` at once, refilled from empty to full in `refillPeriodMs`. */
export interface BucketLimit {
  readonly maxTokens: number;
  readonly refillPeriodMs: number;
}

/** Which bucket refused (its index in the request's list), and in how long it holds a token again. */
export interface BucketRefusal {
  readonly index: number;
  readonly retryAfterMs: number;
}

/** Keys counted in memory, at most. */
export const MAX_BUCKET_KEYS = 50_000;

/** How long a take waits for Redis before it counts in this process instead. */
export const REDIS_BUCKET_TIMEOUT_MS = 250;

/** After Redis could not answer, how long takes count in this process without asking it. */
export const REDIS_BUCKET_RETRY_MS = 1000;

interface BucketRecord {
  tokens: number;
  at: number;
}

/** Milliseconds until a bucket holding `tokens` (< 1) holds one. */
const untilOneToken = (tokens: number, limit: BucketLimit): number => Math.ceil(((1 - tokens) * limit.refillPeriodMs) / limit.maxTokens);

/** Buckets in this process: synchronous, one record per key in a bounded LRU. */
export class MemoryBuckets {
  readonly #records: LRUCache<string, BucketRecord>;
  readonly #now: () => number;
  /** The records the first pass found, for the second (take is synchronous: one list serves every call). */
  readonly #found: (BucketRecord | undefined)[] = [];

  constructor(maxKeys = MAX_BUCKET_KEYS, now: () => number = () => performance.now()) {
    // maxSize (each record 1), not max: lru-cache allocates `max` slots up front.
    this.#records = new LRUCache({ maxSize: maxKeys, sizeCalculation: () => 1 });
    this.#now = now;
  }

  /** Takes one token of each of `keys` (under `limits`, pairwise), or none: null when taken. */
  take(keys: readonly string[], limits: readonly BucketLimit[]): BucketRefusal | null {
    const now = this.#now();
    const records = this.#records;
    const found = this.#found;
    // First pass: refill each (the same whatever follows), and find an empty one.
    for (let i = 0; i < keys.length; i++) {
      const limit = limits[i]!;
      const record = records.get(keys[i]!);
      found[i] = record;
      if (record === undefined) continue;
      const refilled = record.tokens + ((now - record.at) * limit.maxTokens) / limit.refillPeriodMs;
      record.tokens = refilled > limit.maxTokens ? limit.maxTokens : refilled;
      record.at = now;
      if (record.tokens < 1) return { index: i, retryAfterMs: untilOneToken(record.tokens, limit) };
    }
    for (let i = 0; i < keys.length; i++) {
      const record = found[i];
      if (record === undefined) records.set(keys[i]!, { tokens: limits[i]!.maxTokens - 1, at: now });
      else record.tokens -= 1;
      found[i] = undefined;
    }
    return null;
  }

  /** Keys held (for tests). */
  get size(): number {
    return this.#records.size;
  }
}

/**
 * KEYS: the buckets; ARGV: maxTokens and refillPeriodMs of each, pairwise. Returns {0, 0} when a
 * token was taken from each, else {index (1-based), ms until that bucket holds a token}.
 */
const TAKE_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local held = {}
for i = 1, #KEYS do
  local max = tonumber(ARGV[2 * i - 1])
  local period = tonumber(ARGV[2 * i])
  local tokens = max
  local saved = redis.call('HMGET', KEYS[i], 't', 'ts')
  if saved[1] then
    tokens = math.min(max, tonumber(saved[1]) + math.max(0, now - tonumber(saved[2])) * max / period)
  end
  if tokens < 1 then
    return {i, math.ceil((1 - tokens) * period / max)}
  end
  held[i] = tokens
end
for i = 1, #KEYS do
  local max = tonumber(ARGV[2 * i - 1])
  local period = tonumber(ARGV[2 * i])
  local left = held[i] - 1
  redis.call('HSET', KEYS[i], 't', tostring(left), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[i], math.max(1, math.ceil((max - left) * period / max)))
end
return {0, 0}
`;

type TakeCommand = (numberOfKeys: number, ...args: (string | number)[]) => Promise<[number, number]>;

export interface RedisBucketStore {
  readonly client: Redis;
  /** Every key starts with it (`<storage keyPrefix>ratelimit:<name>:`). */
  readonly keyPrefix: string;
}

/**
 * The buckets of a gateway: in memory, or in Redis with the memory buckets as insurance.
 * `take` answers synchronously in memory; on Redis it returns a promise, unless the keys are
 * known to be refused or Redis is not ready.
 */
export class TokenBuckets {
  readonly memory: MemoryBuckets;
  readonly #redis: RedisBucketStore | null;
  /** Keys Redis refused, until they hold a token again (ms, this process's clock). */
  readonly #blocked: LRUCache<string, number>;
  readonly #timeoutMs: number;
  /** Told when Redis could not answer and the request was counted in memory. */
  readonly #onFallback: (err: unknown) => void;
  /** performance.now() until which takes count in memory: Redis could not answer just now. */
  #memoryUntil = 0;

  constructor(redis: RedisBucketStore | null, options: { maxKeys?: number; timeoutMs?: number; onFallback?: (err: unknown) => void } = {}) {
    const maxKeys = options.maxKeys ?? MAX_BUCKET_KEYS;
    this.memory = new MemoryBuckets(maxKeys);
    this.#redis = redis;
    this.#blocked = new LRUCache({ maxSize: maxKeys, sizeCalculation: () => 1 });
    this.#timeoutMs = options.timeoutMs ?? REDIS_BUCKET_TIMEOUT_MS;
    this.#onFallback = options.onFallback ?? (() => undefined);
    if (redis !== null && typeof (redis.client as unknown as Record<string, unknown>)['gatehouseTakeTokens'] !== 'function') {
      redis.client.defineCommand('gatehouseTakeTokens', { lua: TAKE_SCRIPT });
    }
  }

  /** Whether the buckets are shared through Redis. */
  get shared(): boolean {
    return this.#redis !== null;
  }

  /** Takes one token of each of `keys` (under `limits`, pairwise), or none: null when taken. */
  take(keys: readonly string[], limits: readonly BucketLimit[]): BucketRefusal | null | Promise<BucketRefusal | null> {
    const redis = this.#redis;
    if (redis === null) return this.memory.take(keys, limits);
    const blocked = this.#blockedAmong(keys);
    if (blocked !== null) return blocked;
    if (redis.client.status !== 'ready') {
      this.#onFallback(new Error(`Redis is ${redis.client.status}`));
      return this.memory.take(keys, limits);
    }
    if (this.#memoryUntil !== 0) {
      if (performance.now() < this.#memoryUntil) return this.memory.take(keys, limits);
      this.#memoryUntil = 0;
    }
    return this.#takeInRedis(redis, keys, limits);
  }

  #blockedAmong(keys: readonly string[]): BucketRefusal | null {
    if (this.#blocked.size === 0) return null;
    const now = performance.now();
    for (let i = 0; i < keys.length; i++) {
      const until = this.#blocked.get(keys[i]!);
      if (until === undefined) continue;
      if (until > now) return { index: i, retryAfterMs: Math.ceil(until - now) };
      this.#blocked.delete(keys[i]!);
    }
    return null;
  }

  async #takeInRedis(redis: RedisBucketStore, keys: readonly string[], limits: readonly BucketLimit[]): Promise<BucketRefusal | null> {
    const args: (string | number)[] = [];
    for (const key of keys) args.push(redis.keyPrefix + key);
    for (const limit of limits) args.push(limit.maxTokens, limit.refillPeriodMs);
    const command = (redis.client as unknown as { gatehouseTakeTokens: TakeCommand }).gatehouseTakeTokens;
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = await Promise.race([
        command.call(redis.client, keys.length, ...args),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`Redis did not answer within ${this.#timeoutMs} ms`)), this.#timeoutMs);
        }),
      ]);
      const [index, retryAfterMs] = answer;
      if (index === 0) return null;
      const refusal = { index: index - 1, retryAfterMs: Math.max(1, retryAfterMs) };
      this.#blocked.set(keys[refusal.index]!, performance.now() + refusal.retryAfterMs);
      return refusal;
    } catch (err) {
      this.#onFallback(err);
      this.#memoryUntil = performance.now() + REDIS_BUCKET_RETRY_MS;
      return this.memory.take(keys, limits);
    } finally {
      clearTimeout(timer);
    }
  }
}
