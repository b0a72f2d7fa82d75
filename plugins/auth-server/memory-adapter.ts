/**
 * Where the authorization server keeps what it issues (codes, tokens, grants, sessions,
 * interactions, registered clients) when `storage` is not set: in this process, each record
 * until its own expiry, bounded in number. Lost on restart, as the embedded server's in-memory
 * storage is documented to be. The provider's model calls it through oidc-provider's adapter
 * interface, one adapter per model name.
 */
import { LRUCache } from 'lru-cache';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { refreshRetry, type RotationAware } from './refresh-retry.ts';
import { clientBudget, clientsFull, temporarilyUnavailable } from './store-errors.ts';

/**
 * Records kept per model at most, by number and by size (their JSON): a flood of registrations
 * or authorizations evicts the oldest instead of growing memory.
 */
const MAX_RECORDS = 100_000;
const MAX_BYTES = 32 * 1024 * 1024;

/**
 * Records that stand for someone's standing access (a grant, a login session, a refresh token)
 * are never evicted to make room: past the budget a new one is refused (503, the request fails)
 * instead, so a flood cannot push real users out. Registered clients have a budget of their own
 * (`maxClients`): a full one drops the oldest client nobody ever used (store-errors.ts), and
 * refuses the registration (503 naming the limit) when there is none. Short-lived records
 * (interactions, codes) are evicted, oldest first.
 */
const KEPT_MODELS = new Set(['Client', 'Grant', 'Session', 'RefreshToken']);

export interface MemoryAdapterOptions {
  /** Seconds a registered client is kept unused (each use starts it again). */
  readonly clientIdleSeconds: number;
  /** Registered clients kept at most. */
  readonly maxClients: number;
}

export class MemoryAdapter implements Adapter, RotationAware {
  readonly #records: LRUCache<string, AdapterPayload>;
  readonly #kept: boolean;
  readonly #model: string;
  /** Registered clients: ms they are kept unused (each use starts it again); null for other models. */
  readonly #idleMs: number | null;
  /** grantId → ids of this model's records of that grant (the provider revokes model by model). */
  readonly #byGrant = new Map<string, Set<string>>();
  readonly #byUid = new Map<string, string>();
  readonly #byUserCode = new Map<string, string>();
  /**
   * Refresh tokens used whose rotation has not completed (refresh-retry.ts): id → its grant and
   * until when a retry is allowed. Dropped when a refresh of the grant completes.
   */
  readonly #pending = new LRUCache<string, { grantId: string; until: number }>({ max: MAX_RECORDS });
  /** Clients: how many at most; those never used, id → when registered (oldest first). */
  readonly #maxRecords: number;
  readonly #unused = new Map<string, number>();
  /** Grants: tells the clients' store that a client was used. */
  readonly #used: ((clientId: string) => void) | null;

  constructor(model: string, options: MemoryAdapterOptions, used: ((clientId: string) => void) | null = null) {
    this.#model = model;
    this.#kept = KEPT_MODELS.has(model);
    this.#idleMs = model === 'Client' ? options.clientIdleSeconds * 1000 : null;
    this.#maxRecords = model === 'Client' ? Math.min(options.maxClients, MAX_RECORDS) : MAX_RECORDS;
    this.#used = used;
    this.#records = new LRUCache({
      max: MAX_RECORDS,
      maxSize: MAX_BYTES,
      ttlAutopurge: false,
      dispose: (payload, id) => {
        this.#unused.delete(id);
        if (payload.uid !== undefined) this.#byUid.delete(payload.uid);
        if (payload.userCode !== undefined) this.#byUserCode.delete(payload.userCode);
        if (payload.grantId !== undefined) this.#byGrant.get(payload.grantId)?.delete(id);
      },
    });
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    // Measured once, for the budget check and for the cache's own size accounting.
    const size = Math.max(1, JSON.stringify(payload).length);
    const added = !this.#records.has(id);
    if (this.#kept && added && !this.#makeRoom(size)) {
      if (this.#model === 'Client' && this.#records.size >= this.#maxRecords) throw await clientsFull(this.#maxRecords);
      throw await temporarilyUnavailable(`the in-memory storage of ${this.#model} records is full (${MAX_RECORDS} records or ${MAX_BYTES / 1024 / 1024} MiB): use Redis storage`, 60);
    }
    if (added && this.#model === 'Client') this.#unused.set(id, Date.now());
    if (this.#model === 'Grant' && typeof payload.clientId === 'string') this.#used?.(payload.clientId);
    const ttl = expiresIn !== undefined ? expiresIn * 1000 : this.#idleMs;
    this.#records.set(id, payload, ttl === null ? { size } : { size, ttl });
    if (payload.uid !== undefined) this.#byUid.set(payload.uid, id);
    if (payload.userCode !== undefined) this.#byUserCode.set(payload.userCode, id);
    if (payload.grantId !== undefined) {
      let ids = this.#byGrant.get(payload.grantId);
      if (ids === undefined) this.#byGrant.set(payload.grantId, (ids = new Set()));
      ids.add(id);
    }
  }

  /** Whether a new record of `size` fits, after dropping expired records and, for clients, the oldest never used past its grace. */
  #makeRoom(size: number): boolean {
    const fits = (): boolean => this.#records.size < this.#maxRecords && this.#records.calculatedSize + size <= MAX_BYTES;
    if (fits()) return true;
    this.#records.purgeStale();
    const before = Date.now() - clientBudget.unusedGraceMs;
    for (const [id, registeredAt] of this.#unused) {
      if (fits() || registeredAt > before) break;
      this.#records.delete(id);
    }
    return fits();
  }

  /** A client was granted access by a user: it is no longer one that may make room. */
  markUsed(clientId: string): void {
    this.#unused.delete(clientId);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    // A registered client's use keeps it (its idle time starts again).
    const payload = this.#records.get(id, this.#idleMs === null ? undefined : { updateAgeOnGet: true });
    if (payload?.consumed === undefined || this.#model !== 'RefreshToken') return payload;
    // A refresh token whose rotation did not complete, within the window: not used yet.
    const pending = this.#pending.get(id);
    if (pending === undefined || pending.until <= Date.now()) return payload;
    const { consumed: _used, ...unused } = payload;
    return unused;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const id = this.#byUid.get(uid);
    return id === undefined ? undefined : this.#records.get(id);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    const id = this.#byUserCode.get(userCode);
    return id === undefined ? undefined : this.#records.get(id);
  }

  async consume(id: string): Promise<void> {
    const payload = this.#records.get(id);
    if (payload === undefined) return;
    payload.consumed = Math.floor(Date.now() / 1000);
    // A refresh token's rotation starts: it may be retried until the refresh completes (the
    // window counts from its first use).
    if (this.#model === 'RefreshToken' && typeof payload.grantId === 'string' && !this.#pending.has(id)) {
      this.#pending.set(id, { grantId: payload.grantId, until: Date.now() + refreshRetry.windowMs });
    }
  }

  async rotated(grantId: string): Promise<void> {
    for (const id of this.#byGrant.get(grantId) ?? []) this.#pending.delete(id);
  }

  async destroy(id: string): Promise<void> {
    this.#records.delete(id);
    this.#pending.delete(id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    const ids = this.#byGrant.get(grantId);
    if (ids === undefined) return;
    this.#byGrant.delete(grantId);
    for (const id of ids) {
      this.#records.delete(id);
      this.#pending.delete(id);
    }
  }
}

/**
 * The adapter class the provider is given: one store per model name for this server (the
 * provider may construct an adapter more than once for a model; it gets the same store).
 */
export function memoryAdapterClass(options: MemoryAdapterOptions): new (model: string) => Adapter {
  const stores = new Map<string, MemoryAdapter>();
  const storeOf = (model: string): MemoryAdapter => {
    let store = stores.get(model);
    if (store === undefined) {
      const used = model === 'Grant' ? (clientId: string) => storeOf('Client').markUsed(clientId) : null;
      stores.set(model, (store = new MemoryAdapter(model, options, used)));
    }
    return store;
  };
  return class {
    constructor(model: string) {
      return storeOf(model);
    }
  } as unknown as new (model: string) => Adapter;
}
