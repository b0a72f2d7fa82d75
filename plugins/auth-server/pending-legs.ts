/**
 * The legs of sign-ins in progress: for each interaction (one authorization request), the one
 * upstream provider's leg that waits for its callback, with the state it must come back with.
 *
 * Bounded so that no address can push out another's sign-in:
 *  - one leg per interaction: opening the interaction again (a reload, or a flood of GETs of
 *    /oauth/interaction/:uid) replaces its leg instead of adding one;
 *  - at most `perAddress` interactions with a leg per client address (an IPv6 client by its
 *    /64), and `total` in all: past either, the new leg is refused (PendingLoginLimit), never
 *    someone else's dropped. Legs expire with the interaction (10 minutes).
 * In memory, and in Redis (one key per interaction, a sorted set of expiries per address and
 * one of all, kept by one script each, so replicas count together).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Buffer } from 'node:buffer';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { durably } from './redis-adapter.ts';
import type { UpstreamIdentity } from './upstream-providers.ts';

/** One leg of a login in progress: what its callback must match. */
export interface PendingLeg {
  /** The provider's interaction this leg belongs to. */
  readonly uid: string;
  /** The client address (limit key) that opened it. */
  readonly address: string;
  /** sha256 of the state sent to the provider (base64url): the state itself is not kept. */
  readonly stateHash: string;
  readonly providerIndex: number;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** Who the first provider said logged in (null before it answered). */
  readonly identity: UpstreamIdentity | null;
  /** This attempt's id: the key of what it stored so far. */
  readonly attempt: string;
}

export interface PendingLegBounds {
  readonly total: number;
  readonly perAddress: number;
}

/** A new leg past a bound: the sign-in cannot start now. */
export class PendingLoginLimit extends Error {
  readonly scope: 'perAddress' | 'total';
  readonly limit: number;
  constructor(scope: 'perAddress' | 'total', limit: number) {
    super(
      scope === 'perAddress'
        ? `too many sign-ins in progress from this address: at most ${limit} (authServerConfig.maxPendingLoginsPerAddress); finish or abandon one, or retry in a few minutes`
        : `too many sign-ins in progress on this server: at most ${limit} (authServerConfig.maxPendingLogins); retry in a few minutes`,
    );
    this.scope = scope;
    this.limit = limit;
  }
}

/** How long a leg waits for its callback: as long as the provider's interaction lives. */
export const LEG_TTL_MS = 10 * 60_000;

export const stateHash = (state: string): string => createHash('sha256').update(state).digest('base64url');

/** The interaction's uid a state starts with (`<uid>.<random>`), or null. */
export function uidOfState(state: string): string | null {
  return /^([\w-]{1,128})\./.exec(state)?.[1] ?? null;
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface PendingLegs {
  /** Stores the interaction's leg, replacing its earlier one; PendingLoginLimit past a bound. */
  put(leg: PendingLeg): Promise<void>;
  /** The leg `state` was sent with, removed (a state is good for one callback); null for any other state. */
  take(state: string): Promise<PendingLeg | null>;
  /** Whether a leg waits for `state` (it is not taken). */
  has(state: string): Promise<boolean>;
}

export class MemoryPendingLegs implements PendingLegs {
  readonly #bounds: PendingLegBounds;
  readonly #legs: LRUCache<string, PendingLeg>;
  /** address → uid → when its leg expires. */
  readonly #byAddress = new Map<string, Map<string, number>>();

  constructor(bounds: PendingLegBounds) {
    this.#bounds = bounds;
    this.#legs = new LRUCache({
      // Counted by maxSize, not max: lru-cache allocates `max` slots up front, and the bound may be large.
      maxSize: bounds.total,
      sizeCalculation: () => 1,
      ttl: LEG_TTL_MS,
      dispose: (leg, uid) => {
        const uids = this.#byAddress.get(leg.address);
        uids?.delete(uid);
        if (uids?.size === 0) this.#byAddress.delete(leg.address);
      },
    });
  }

  async put(leg: PendingLeg): Promise<void> {
    const earlier = this.#legs.get(leg.uid);
    const now = Date.now();
    if (earlier?.address !== leg.address) {
      const uids = this.#byAddress.get(leg.address);
      if (uids !== undefined && uids.size >= this.#bounds.perAddress) {
        for (const [uid, expiresAt] of uids) if (expiresAt <= now) this.#legs.delete(uid);
        if (uids.size >= this.#bounds.perAddress) throw new PendingLoginLimit('perAddress', this.#bounds.perAddress);
      }
    }
    if (earlier === undefined && this.#legs.size >= this.#bounds.total) {
      this.#legs.purgeStale();
      if (this.#legs.size >= this.#bounds.total) throw new PendingLoginLimit('total', this.#bounds.total);
    }
    this.#legs.set(leg.uid, leg);
    let uids = this.#byAddress.get(leg.address);
    if (uids === undefined) this.#byAddress.set(leg.address, (uids = new Map()));
    uids.set(leg.uid, now + LEG_TTL_MS);
  }

  async take(state: string): Promise<PendingLeg | null> {
    const uid = uidOfState(state);
    const leg = uid === null ? undefined : this.#legs.get(uid);
    if (leg === undefined || !sameHash(leg.stateHash, stateHash(state))) return null;
    this.#legs.delete(leg.uid);
    return leg;
  }

  async has(state: string): Promise<boolean> {
    const uid = uidOfState(state);
    const leg = uid === null ? undefined : this.#legs.get(uid);
    return leg !== undefined && sameHash(leg.stateHash, stateHash(state));
  }

  /** Legs held (tests, figures). */
  get size(): number {
    return this.#legs.size;
  }
}

/**
 * Stores a leg (see the top). KEYS: the leg, its address's set, the set of all; ARGV: uid, leg
 * JSON, ttl (ms), per-address bound, total bound, address, prefix of the address sets.
 * Answers 'ok', 'perAddress' or 'total'. Expiries are Redis's own clock (TIME), so replicas agree.
 */
const PUT_LEG = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 'perAddress' end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if not redis.call('ZSCORE', KEYS[3], ARGV[1]) and redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then return 'total' end
local earlier = redis.call('GET', KEYS[1])
if earlier then
  local ok, leg = pcall(cjson.decode, earlier)
  if ok and type(leg) == 'table' and type(leg.address) == 'string' and leg.address ~= ARGV[6] then redis.call('ZREM', ARGV[7] .. leg.address, ARGV[1]) end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[3], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[3], ttl)
return 'ok'`;

/**
 * Takes a leg if `state` is the one it was sent with (its hash). KEYS: the leg, the set of all;
 * ARGV: uid, the state's hash, prefix of the address sets. Answers the leg's JSON, or nil.
 */
const TAKE_LEG = `
local raw = redis.call('GET', KEYS[1])
if not raw then return false end
local ok, leg = pcall(cjson.decode, raw)
if not ok or type(leg) ~= 'table' or leg.stateHash ~= ARGV[2] then return false end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if type(leg.address) == 'string' then redis.call('ZREM', ARGV[3] .. leg.address, ARGV[1]) end
return raw`;

export class RedisPendingLegs implements PendingLegs {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #bounds: PendingLegBounds;
  readonly #durable: boolean;

  /** `prefix`: the login store's (`<keyPrefix>auth:`). */
  constructor(client: Redis, prefix: string, bounds: PendingLegBounds, durable: boolean) {
    this.#client = client;
    this.#prefix = prefix;
    this.#bounds = bounds;
    this.#durable = durable;
  }

  async put(leg: PendingLeg): Promise<void> {
    const byAddress = `${this.#prefix}legs:address:`;
    const answer = await durably(this.#client, this.#durable, () =>
      this.#client.eval(
        PUT_LEG, 3, `${this.#prefix}leg:${leg.uid}`, byAddress + leg.address, `${this.#prefix}legs:all`,
        leg.uid, JSON.stringify(leg), String(LEG_TTL_MS), String(this.#bounds.perAddress), String(this.#bounds.total), leg.address, byAddress,
      ),
    );
    if (answer === 'perAddress') throw new PendingLoginLimit('perAddress', this.#bounds.perAddress);
    if (answer === 'total') throw new PendingLoginLimit('total', this.#bounds.total);
  }

  async take(state: string): Promise<PendingLeg | null> {
    const uid = uidOfState(state);
    if (uid === null) return null;
    const raw = (await this.#client.eval(TAKE_LEG, 2, `${this.#prefix}leg:${uid}`, `${this.#prefix}legs:all`, uid, stateHash(state), `${this.#prefix}legs:address:`)) as string | null;
    return raw === null ? null : (JSON.parse(raw) as PendingLeg);
  }

  async has(state: string): Promise<boolean> {
    const uid = uidOfState(state);
    if (uid === null) return false;
    const raw = await this.#client.get(`${this.#prefix}leg:${uid}`);
    if (raw === null) return false;
    try {
      return sameHash((JSON.parse(raw) as PendingLeg).stateHash, stateHash(state));
    } catch {
      return false;
    }
  }
}
