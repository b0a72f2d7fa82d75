/**
 * Verified tokens, cached so that a repeat costs a lookup and a string compare instead of a
 * signature check (~80-135 µs with jose on the benchmark machine, more than a whole proxy hop).
 *
 * - Slotted by the last 32 characters of the token's signature (192 bits nobody can predict
 *   without the signing key; an opaque token is its own slot), and an entry answers only the
 *   very token it was made for: a hit compares the whole token. Taking the slot costs a slice;
 *   the SHA-256 of the whole token it replaces cost 0.7 of a hit's 0.8 µs and ~20k instructions
 *   of a miss. A token with another payload under a copied signature finds the slot but not the
 *   entry, so it is verified (and refused) like any other; it never replaces the entry either,
 *   since only verified tokens are stored.
 * - The cache therefore holds the tokens it has verified, in memory only: they are never logged
 *   or serialised, and each leaves with its entry.
 * - Each entry lives until the token's `exp` (or its earlier `validUntil`), never longer: the entry
 *   keeps that instant and a hit compares it with the clock. lru-cache bounds the count; its own
 *   TTL bookkeeping made every lookup ~600 instructions, twice a plain get and a clock read
 *   (callgrind, bench/load), on every bearer request.
 * - Entries are frozen: the plugins after incoming auth share them read-only.
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { VerifiedToken } from './contract.ts';

/** Characters of a signature that make a slot: 32 base64url characters, 192 bits. */
const SLOT_CHARS = 32;
/** An opaque token longer than this is slotted by its SHA-256 (V8 hashes strings over 16,383 chars by length alone). */
const MAX_SLOT_CHARS = 2048;

/**
 * The cache slot of `token`: for a JWS whose signature has at least 32 characters, its last 32;
 * for anything else (an opaque token), the token itself, or its SHA-256 when it is long.
 */
export function tokenCacheKey(token: string): string {
  const n = token.length;
  if (n > SLOT_CHARS && token.indexOf('.', n - SLOT_CHARS) === -1 && token.indexOf('.') !== -1) return token.slice(n - SLOT_CHARS);
  return n > MAX_SLOT_CHARS ? hash('sha256', token, 'binary') : token;
}

export interface TokenCacheOptions {
  readonly max: number;
  /** Clock, ms since the epoch. When given, lru-cache also measures TTLs with it (tests). */
  readonly now?: () => number;
}

/** Freezes `value` and everything it holds (JSON data: plain objects and arrays), without allocating. */
function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) deepFreeze(value[i]);
  } else {
    for (const key in value) deepFreeze(value[key]);
  }
  return value;
}

interface Entry {
  /** The token this entry was made for: a hit must present exactly it. */
  readonly token: string;
  readonly verified: VerifiedToken;
  /** When the entry ends (ms, the cache's clock): the token's validUntil, else its exp. */
  readonly until: number;
}

export class VerifiedTokenCache {
  readonly #cache: LRUCache<string, Entry>;
  readonly #now: () => number;

  constructor(options: TokenCacheOptions) {
    this.#now = options.now ?? Date.now;
    this.#cache = new LRUCache<string, Entry>({ max: options.max });
  }

  /** What `token` (whose slot is `key`) was verified as, or undefined (also once it has expired). */
  get(key: string, token: string): VerifiedToken | undefined {
    const entry = this.#cache.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() >= entry.until) {
      this.#cache.delete(key);
      return undefined;
    }
    return entry.token === token ? entry.verified : undefined;
  }

  /**
   * Caches what `token` was verified as until its `validUntil` (default: its `expiresAt`), in
   * slot `key`, replacing what the slot held; an expired token is not cached.
   */
  set(key: string, token: string, verified: VerifiedToken): void {
    // Gone at exp itself; a token already past it (or without a number there) is not cached.
    const until = verified.validUntil ?? verified.expiresAt * 1000;
    if (!(until > this.#now())) return;
    this.#cache.set(key, { token, verified: deepFreeze(verified), until });
  }

  clear(): void {
    this.#cache.clear();
  }

  get size(): number {
    return this.#cache.size;
  }
}
