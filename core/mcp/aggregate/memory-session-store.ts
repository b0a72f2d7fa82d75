/**
 * Aggregated sessions in this process only (the embedded default, one gateway process): a
 * bounded LRU with a sliding time to live. `touch` resets a session's age; beyond `max`
 * sessions the least recently used one is evicted.
 *
 * The age is kept here, next to the record, not by lru-cache's `ttl`: `touch` is on every
 * aggregated request, and lru-cache's TTL bookkeeping (a clock read to test the age and another
 * to reset it, per get) made each touch ~870 instructions, three times a plain get and a stamp
 * (measured under callgrind, bench/load). lru-cache still keeps the order and the bound.
 *
 * A session that ends without a DELETE from its client (expired, or evicted to make room)
 * is reported to `onExpire(record, reason)`, so the endpoint can close its backend sessions.
 * Expired sessions are found by a periodic sweep (an unref'd timer) and on access, so the
 * callback runs even for a session nobody asks for again. `delete`, replacing a record with
 * `save`, and `close` do not call it: the caller ends those sessions itself, and a gateway
 * shutting down is not the end of its sessions.
 *
 * One owner holds at most `maxPerOwner` sessions, and at most `maxBytesPerOwner` bytes of them
 * (each record's size as JSON, as the Redis store keeps it): saving a new one beyond either removes
 * the owner's oldest until both hold, never the new one, and returns them (not reported to
 * `onExpire`: the caller closes what it returns).
 *
 * Records are kept by reference (they are readonly); nothing is copied.
 */
import { LRUCache } from 'lru-cache';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../../observe/log.ts';
import { ownerKey, recordSize, type CreateOutcome, type SessionOwner, type SessionRecord, type SessionStore } from './session-store.ts';

/** One owner's sessions: id → size of its record (oldest first), and their sum. */
interface OwnerIndex {
  readonly sizes: Map<string, number>;
  bytes: number;
}

/** Sets (or, with null, removes) session `id`'s size in `index`, keeping the sum. */
function resize(index: OwnerIndex, id: string, size: number | null): void {
  index.bytes -= index.sizes.get(id) ?? 0;
  if (size === null) index.sizes.delete(id);
  else {
    // A session keeps its place (its age) when its record changes.
    index.sizes.set(id, size);
    index.bytes += size;
  }
}

/** A stored session: its record, and when it was last saved or touched (the store's clock). */
interface Held {
  readonly record: SessionRecord;
  usedAt: number;
}

/** Why a session ended without a DELETE. */
export type SessionEndReason = 'expired' | 'evicted';

export interface MemorySessionStoreOptions {
  /** Most sessions kept at once (a positive integer); the least recently used is evicted. */
  readonly max: number;
  /** Most sessions of one owner (default: no bound but `max`); its oldest goes first. */
  readonly maxPerOwner?: number;
  /** Most bytes of one owner's sessions, their records as JSON (default: no bound); its oldest go first. */
  readonly maxBytesPerOwner?: number;
  /** Sliding time to live of a session, in ms (a positive integer). */
  readonly ttlMs: number;
  /** Called once for each session that expired or was evicted. Must not throw (a throw is logged). */
  readonly onExpire?: (record: SessionRecord, reason: SessionEndReason) => void;
  /** Period of the sweep for expired sessions; default ttlMs/4 within 1 s..60 s; 0 = no timer. */
  readonly sweepIntervalMs?: number;
  readonly log?: Logger;
  /** Clock in ms (tests); default `performance.now`. */
  readonly now?: () => number;
}

const positive = (value: number, what: string): number => {
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`MemorySessionStore: ${what} must be a positive whole number (got ${value})`);
  return value;
};

export class MemorySessionStore implements SessionStore {
  readonly #cache: LRUCache<string, Held>;
  readonly #ttl: number;
  /** The test clock, or null for performance.now() (read directly: no call through a closure). */
  readonly #clock: (() => number) | null;
  readonly #onExpire: MemorySessionStoreOptions['onExpire'];
  readonly #log: Logger | null;
  readonly #maxPerOwner: number;
  readonly #maxBytesPerOwner: number;
  /** Owner → its sessions' ids, oldest first (a Map keeps insertion order), with their sizes. */
  readonly #byOwner = new Map<string, OwnerIndex>();
  #timer: NodeJS.Timeout | null = null;

  constructor(options: MemorySessionStoreOptions) {
    this.#ttl = positive(options.ttlMs, 'ttlMs');
    this.#clock = options.now ?? null;
    this.#onExpire = options.onExpire;
    this.#log = options.log ?? null;
    this.#maxPerOwner = options.maxPerOwner === undefined ? Infinity : positive(options.maxPerOwner, 'maxPerOwner');
    this.#maxBytesPerOwner = options.maxBytesPerOwner === undefined ? Infinity : positive(options.maxBytesPerOwner, 'maxBytesPerOwner');
    this.#cache = new LRUCache<string, Held>({
      max: positive(options.max, 'max'),
      // Whatever the reason, a record that leaves the cache leaves its owner's index.
      dispose: (held, id, reason) => {
        if (reason !== 'set') this.#unindex(held.record, id);
      },
      // After the cache operation completes, so the callback may use the store again.
      disposeAfter: (held, _id, reason) => {
        if (reason === 'evict') this.#ended(held.record, 'evicted');
      },
    });
    const interval = options.sweepIntervalMs ?? Math.min(Math.max(Math.floor(this.#ttl / 4), 1_000), 60_000);
    if (interval > 0) {
      this.#timer = setInterval(() => this.sweep(), interval);
      this.#timer.unref();
    }
  }

  /** Sessions held now (expired ones not yet swept included). */
  get size(): number {
    return this.#cache.size;
  }

  #now(): number {
    return this.#clock === null ? performance.now() : this.#clock();
  }

  /** Whether `held` outlived the TTL by `now`. */
  #expired(held: Held, now: number): boolean {
    return now - held.usedAt > this.#ttl;
  }

  /** Removes an expired session and reports it. */
  #expire(id: string, held: Held): void {
    this.#cache.delete(id); // dispose takes it out of the owner's index
    this.#ended(held.record, 'expired');
  }

  /** Removes the expired sessions now, calling `onExpire` for each. */
  sweep(): void {
    const now = this.#now();
    const expired: [string, Held][] = [];
    for (const [id, held] of this.#cache.entries()) if (this.#expired(held, now)) expired.push([id, held]);
    for (const [id, held] of expired) if (this.#cache.peek(id) === held) this.#expire(id, held);
  }

  /** The session, its age reset (an expired one is removed and reported: null). */
  touch(id: string): SessionRecord | null {
    const held = this.#cache.get(id);
    if (held === undefined) return null;
    const now = this.#now();
    if (this.#expired(held, now)) {
      this.#expire(id, held);
      return null;
    }
    held.usedAt = now;
    return held.record;
  }

  /** Whether the session is held and not expired; its age and place unchanged. */
  #holds(id: string): boolean {
    const held = this.#cache.peek(id);
    return held !== undefined && !this.#expired(held, this.#now());
  }

  async save(record: SessionRecord): Promise<readonly SessionRecord[]> {
    const isNew = !this.#holds(record.id);
    this.#cache.set(record.id, { record, usedAt: this.#now() });
    if (record.owner === null) return [];
    const key = ownerKey(record.owner);
    let index = this.#byOwner.get(key);
    if (index === undefined) this.#byOwner.set(key, (index = { sizes: new Map(), bytes: 0 }));
    resize(index, record.id, recordSize(record));
    if (!isNew) return [];
    const removed: SessionRecord[] = [];
    for (const oldest of index.sizes.keys()) {
      if (index.sizes.size <= this.#maxPerOwner && index.bytes <= this.#maxBytesPerOwner) break;
      if (oldest === record.id) continue;
      const old = this.#cache.peek(oldest);
      this.#cache.delete(oldest); // dispose takes it out of the index
      resize(index, oldest, null);
      if (old !== undefined) removed.push(old.record);
    }
    return removed;
  }

  async create(record: SessionRecord): Promise<CreateOutcome> {
    const existing = this.touch(record.id);
    if (existing !== null) return { created: false, existing };
    return { created: true, ended: await this.save(record) };
  }

  async update(record: SessionRecord): Promise<boolean> {
    if (!this.#holds(record.id)) return false;
    this.#cache.set(record.id, { record, usedAt: this.#now() });
    const index = record.owner === null ? undefined : this.#byOwner.get(ownerKey(record.owner));
    if (index?.sizes.has(record.id) === true) resize(index, record.id, recordSize(record));
    return true;
  }

  /** The bytes an owner's sessions hold here (their records as JSON); 0 for an owner without sessions. */
  bytesOf(owner: SessionOwner): number {
    return this.#byOwner.get(ownerKey(owner))?.bytes ?? 0;
  }

  #unindex(record: SessionRecord, id: string): void {
    if (record.owner === null) return;
    const key = ownerKey(record.owner);
    const index = this.#byOwner.get(key);
    if (index === undefined) return;
    resize(index, id, null);
    if (index.sizes.size === 0) this.#byOwner.delete(key);
  }

  async delete(id: string): Promise<void> {
    this.#cache.delete(id);
  }

  /** Stops the sweep and forgets every session, without calling `onExpire`. */
  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#cache.clear();
    this.#byOwner.clear();
  }

  #ended(record: SessionRecord, reason: SessionEndReason): void {
    try {
      this.#onExpire?.(record, reason);
    } catch (err) {
      this.#log?.error({ error: err instanceof Error ? err.message : String(err), reason }, 'session onExpire callback failed');
    }
  }
}
