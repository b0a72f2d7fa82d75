/**
 * What a generation of the server (generation.ts) sees of the sessions every generation shares.
 *
 * A session's record names the backends it joined (and those that were down at initialize) by
 * name, as the generation that created it had them. Seen through this view by a later
 * generation, a record loses the backends the configuration no longer has (they leave its lists,
 * and their backend sessions are no longer used), and lists the backends added since as missing:
 * the session healer (core/mcp/aggregate/healing.ts) joins them on the session's next list, as
 * it joins a backend that was down at initialize, and tells the client list_changed. What the
 * healer writes back goes to the shared store, so the adjustment is made once per session.
 *
 * The relay's handler is held back until the generation serves (`activate`): a generation that
 * fails to start must not take the messages of the one still serving.
 */
import type { SessionStorage } from '../mcp/aggregate/compose.ts';
import type { SessionEnder } from '../mcp/aggregate/group.ts';
import type { Relay, RelayHandler, RelayMessage } from '../mcp/aggregate/relay.ts';
import type { CreateOutcome, SessionOwner, SessionRecord, SessionStore } from '../mcp/aggregate/session-store.ts';
import { isPromise } from '../base/thenable.ts';

/** `record` as seen by a generation whose backends are `names`; the same object when nothing differs. */
export function recordFor(record: SessionRecord, names: ReadonlySet<string>): SessionRecord {
  return namesAlike(record, names) ? record : adjusted(record, names);
}

/**
 * Whether the record names exactly `names`, joined or missing (it does unless the configuration
 * changed since it was made): checked on every request without building an array.
 */
function namesAlike(record: SessionRecord, names: ReadonlySet<string>): boolean {
  let count = 0;
  for (const name in record.backends) {
    if (!names.has(name)) return false;
    count++;
  }
  const missing = record.missing;
  for (let i = 0; i < missing.length; i++) {
    const name = missing[i]!;
    if (!names.has(name) || record.backends[name] !== undefined || missing.indexOf(name) !== i) return false;
    count++;
  }
  return count === names.size;
}

function adjusted(record: SessionRecord, names: ReadonlySet<string>): SessionRecord {
  const joined = Object.keys(record.backends);
  const gone = joined.filter((name) => !names.has(name));
  const added = [...names].filter((name) => record.backends[name] === undefined && !record.missing.includes(name));
  const goneMissing = record.missing.filter((name) => !names.has(name));
  if (gone.length === 0 && added.length === 0 && goneMissing.length === 0) return record;
  const backends = gone.length === 0 ? record.backends : Object.fromEntries(Object.entries(record.backends).filter(([name]) => names.has(name)));
  return { ...record, backends, missing: [...record.missing.filter((name) => names.has(name)), ...added] };
}

/**
 * The shared store as a generation sees it: what it reads (touch, and the record a create found)
 * through `recordFor`; close does nothing (the store outlives every generation); the rest as is.
 * A class rather than a Proxy: it is on every aggregated request (a trap per property read and
 * a bound function per method read cost more than the lookup), and a method the store gains
 * fails to compile here until it is passed on.
 */
class StoreView implements SessionStore {
  readonly #store: SessionStore;
  readonly #names: ReadonlySet<string>;
  /** One function for every touch (no closure per request). */
  readonly #seen = (record: SessionRecord | null): SessionRecord | null => (record === null ? null : recordFor(record, this.#names));

  constructor(store: SessionStore, names: ReadonlySet<string>) {
    this.#store = store;
    this.#names = names;
  }

  touch(id: string, caller?: SessionOwner | null): SessionRecord | null | Promise<SessionRecord | null> {
    const record = this.#store.touch(id, caller);
    return isPromise(record) ? record.then(this.#seen) : this.#seen(record);
  }

  save(record: SessionRecord): Promise<readonly SessionRecord[]> {
    return this.#store.save(record);
  }

  /** A create that found the session already stored answers with that record: seen as touch sees it. */
  async create(record: SessionRecord): Promise<CreateOutcome> {
    const outcome = await this.#store.create(record);
    return outcome.created || outcome.existing === undefined ? outcome : { ...outcome, existing: recordFor(outcome.existing, this.#names) };
  }

  update(record: SessionRecord): Promise<boolean> {
    return this.#store.update(record);
  }

  delete(id: string): Promise<void> {
    return this.#store.delete(id);
  }

  async close(): Promise<void> {}
}

class HeldRelay implements Relay {
  readonly #relay: Relay;
  #handler: RelayHandler | null = null;

  constructor(relay: Relay) {
    this.#relay = relay;
  }

  get replica(): string {
    return this.#relay.replica;
  }

  get key(): Buffer {
    return this.#relay.key;
  }

  async start(): Promise<void> {}

  onMessage(handler: RelayHandler): void {
    this.#handler = handler;
  }

  send(replica: string, message: RelayMessage): Promise<boolean> {
    return this.#relay.send(replica, message);
  }

  claim(name: string, ttlMs: number): boolean | Promise<boolean> {
    return this.#relay.claim(name, ttlMs);
  }

  async close(): Promise<void> {}

  activate(): void {
    if (this.#handler !== null) this.#relay.onMessage(this.#handler);
  }
}

/** A generation's view of the shared storage, and what makes it the serving one. */
export interface GenerationStorage {
  readonly storage: SessionStorage;
  /** This generation serves from now on: relay messages, and memory-store expiry to `sessions`. */
  activate(sessions: SessionEnder): void;
}

export function storageFor(shared: SessionStorage, backends: readonly string[]): GenerationStorage {
  const relay = new HeldRelay(shared.relay);
  const storage: SessionStorage = {
    store: new StoreView(shared.store, new Set(backends)),
    relay,
    serve: () => {},
    reportsEnds: shared.reportsEnds,
    close: async () => {},
  };
  return {
    storage,
    activate: (sessions) => {
      relay.activate();
      shared.serve(sessions);
    },
  };
}
