/**
 * Aggregated sessions in this process only (the embedded default, one gateway process): a
 * bounded LRU with a sliding time to live. `touch` resets a session's age (lru-cache
 * `updateAgeOnGet`); beyond `max` sessions the least recently used one is evicted.
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
  readonly #cache: LRUCache<string, SessionRecord>;
  readonly #onExpire: MemorySessionStoreOptions['onExpire'];
  readonly #log: Logger | null;
  readonly #maxPerOwner: number;
  readonly #maxBytesPerOwner: number;
  /** Owner → its sessions' ids, oldest first (a Map keeps insertion order), with their sizes. */
  readonly #byOwner = new Map<string, OwnerIndex>();
  #timer: NodeJS.Timeout | null = null;

  constructor(options: MemorySessionStoreOptions) {
    const ttl = positive(options.ttlMs, 'ttlMs');
    this.#onExpire = options.onExpire;
    this.#log = options.log ?? null;
    this.#maxPerOwner = options.maxPerOwner === undefined ? Infinity : positive(options.maxPerOwner, 'maxPerOwner');
    this.#maxBytesPerOwner = options.maxBytesPerOwner === undefined ? Infinity : positive(options.maxBytesPerOwner, 'maxBytesPerOwner');
    this.#cache = new LRUCache<string, SessionRecord>({
      max: positive(options.max, 'max'),
      ttl,
      updateAgeOnGet: true,
      // Read the clock per lookup (tens of ns): the default caches it for 1 ms behind a new timer.
      ttlResolution: 0,
      // Whatever the reason, a record that leaves the cache leaves its owner's index.
      dispose: (record, id, reason) => {
        if (reason !== 'set') this.#unindex(record, id);
      },
      // After the cache operation completes, so the callback may use the store again.
      disposeAfter: (record, _id, reason) => {
        if (reason === 'expire') this.#ended(record, 'expired');
        else if (reason === 'evict') this.#ended(record, 'evicted');
      },
      // A test clock must be read on every check (lru-cache otherwise caches `now` for 1 ms).
      ...(options.now !== undefined ? { perf: { now: options.now }, ttlResolution: 0 } : {}),
    });
    const interval = options.sweepIntervalMs ?? Math.min(Math.max(Math.floor(ttl / 4), 1_000), 60_000);
    if (interval > 0) {
      this.#timer = setInterval(() => this.sweep(), interval);
      this.#timer.unref();
    }
  }

  /** Sessions held now (expired ones not yet swept included). */
  get size(): number {
    return this.#cache.size;
  }

  /** Removes the expired sessions now, calling `onExpire` for each. */
  sweep(): void {
    this.#cache.purgeStale();
  }

  touch(id: string): SessionRecord | null {
    return this.#cache.get(id) ?? null;
  }

  async save(record: SessionRecord): Promise<readonly SessionRecord[]> {
    const isNew = !this.#cache.has(record.id);
    this.#cache.set(record.id, record);
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
      const old = this.#cache.peek(oldest, { allowStale: true });
      this.#cache.delete(oldest); // dispose takes it out of the index
      resize(index, oldest, null);
      if (old !== undefined) removed.push(old);
    }
    return removed;
  }

  async create(record: SessionRecord): Promise<CreateOutcome> {
    const existing = this.#cache.get(record.id);
    if (existing !== undefined) return { created: false, existing };
    return { created: true, ended: await this.save(record) };
  }

  async update(record: SessionRecord): Promise<boolean> {
    if (!this.#cache.has(record.id)) return false;
    this.#cache.set(record.id, record);
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
