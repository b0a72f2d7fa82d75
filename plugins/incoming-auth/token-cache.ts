/**
 * Verified tokens, cached so that a repeat costs a hash and a lookup instead of a signature
 * check (~100-170 µs with jose here, more than a whole proxy hop; PERF-NOTES.md).
 *
 * - Keyed by SHA-256 of the whole token: collision resistant, so no other token (say, the same
 *   signature with a different payload) can hit an entry, and the cache holds no raw token.
 * - Each entry lives until the token's `exp` (or its earlier `validUntil`), never longer; lru-cache
 *   bounds the count and measures the TTL with the injected clock.
 * - Entries are frozen: the plugins after incoming auth share them read-only.
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { VerifiedToken } from './contract.ts';

/** The cache key of `token`: SHA-256, as a 32-character binary (latin1) string: the cheapest encoding; never printed. */
export function tokenCacheKey(token: string): string {
  return hash('sha256', token, 'binary');
}

export interface TokenCacheOptions {
  readonly max: number;
  /** Clock, ms since the epoch. When given, lru-cache also measures TTLs with it (tests). */
  readonly now?: () => number;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

export class VerifiedTokenCache {
  readonly #cache: LRUCache<string, VerifiedToken>;
  readonly #now: () => number;

  constructor(options: TokenCacheOptions) {
    this.#now = options.now ?? Date.now;
    this.#cache = new LRUCache<string, VerifiedToken>({
      max: options.max,
      ttl: 60_000, // replaced per entry by the token's own remaining life
      updateAgeOnGet: false,
      // ttlResolution 0: read the clock per lookup (tens of ns) rather than arm a timer every ms to cache it.
      ttlResolution: 0,
      ...(options.now === undefined ? {} : { perf: { now: options.now } }),
    });
  }

  /** The verified token cached under `key`, or undefined (also once it has expired). */
  get(key: string): VerifiedToken | undefined {
    return this.#cache.get(key);
  }

  /** Caches `token` until its `validUntil` (default: its `expiresAt`); an expired token is not cached. */
  set(key: string, token: VerifiedToken): void {
    // lru-cache keeps an entry while its age is <= ttl: one ms less, so it is gone at exp itself.
    // (A ttl of 0 would mean "forever" to lru-cache: such tokens are not cached.)
    const ttl = Math.floor((token.validUntil ?? token.expiresAt * 1000) - this.#now()) - 1;
    if (!(ttl >= 1)) return;
    this.#cache.set(key, deepFreeze(token), { ttl });
  }

  delete(key: string): void {
    this.#cache.delete(key);
  }

  clear(): void {
    this.#cache.clear();
  }

  get size(): number {
    return this.#cache.size;
  }
}
