/**
 * What the login chain keeps: pending legs (single-use, by state, for the interaction's
 * lifetime), the upstream tokens of a login in progress (by attempt), and, once the login
 * completed, the upstream tokens of each grant (by `tsid` and provider) and who the grant's
 * user is. This is the in-memory store (lost on restart); the interface is what a shared one
 * implements.
 */
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { LEG_TTL_MS, MemoryPendingLegs, RedisPendingLegs, type PendingLeg, type PendingLegBounds, type PendingLegs } from './pending-legs.ts';
import { durably, storage } from './redis-adapter.ts';
import type { UpstreamIdentity, UpstreamTokens } from './upstream-providers.ts';

export type { PendingLeg } from './pending-legs.ts';

/** A login through every provider, waiting for the user's answer on the consent page. */
export interface PendingConsent {
  readonly token: string;
  readonly attempt: string;
  readonly identity: UpstreamIdentity;
}

export interface LoginStore {
  /** A login waiting for the user's consent: the page's token, the attempt and who signed in (one answer each). */
  putConsent(uid: string, pending: PendingConsent): Promise<void>;
  /** It, removed. */
  takeConsent(uid: string): Promise<PendingConsent | null>;
  /** It, left in place (the consent page shown again: a reload). */
  peekConsent(uid: string): Promise<PendingConsent | null>;
  /** The interaction's leg (it replaces the interaction's earlier one); PendingLoginLimit past a bound (pending-legs.ts). */
  putLeg(leg: PendingLeg): Promise<void>;
  /** The leg `state` was sent with, removed: a state is good for one callback. */
  takeLeg(state: string): Promise<PendingLeg | null>;
  /** Whether a leg waits for `state` (not taken: a sign-in under way, see endpoint-budgets.ts). */
  hasLeg(state: string): Promise<boolean>;
  /** Keeps a provider's tokens for an attempt in progress. */
  putTokens(attempt: string, provider: string, tokens: UpstreamTokens): Promise<void>;
  /** The attempt completed: its tokens become the grant's (`tsid`), with the user's identity. */
  keepTokens(attempt: string, tsid: string, identity: UpstreamIdentity): Promise<void>;
  /** The attempt failed: everything it stored goes. */
  dropAttempt(attempt: string): Promise<void>;
  /** A provider's tokens for a grant. */
  tokens(tsid: string, provider: string): Promise<UpstreamTokens | null>;
  /**
   * The same, read synchronously, by a store that holds them in this process (memory); absent
   * on a store that must ask elsewhere (Redis). The request path then meets no promise.
   */
  tokensInProcess?(tsid: string, provider: string): UpstreamTokens | null;
  /** The grant was revoked (a replayed code or refresh token): its upstream tokens go too. */
  dropGrant(tsid: string): Promise<void>;
  /** Replaces a provider's tokens of a grant (after a refresh); nothing when the grant is gone. */
  updateTokens(tsid: string, provider: string, tokens: UpstreamTokens): Promise<void>;
  /** The user of a grant's tokens, by subject (for the claims of the JWTs). */
  identity(sub: string): Promise<UpstreamIdentity | null>;
}

const MAX_ENTRIES = 100_000;

/** A grant's upstream tokens, by provider, and when they are dropped (performance.now(), ms). */
interface Grant {
  readonly tokens: Map<string, UpstreamTokens>;
  readonly until: number;
}

export class MemoryLoginStore implements LoginStore {
  readonly #legs: PendingLegs;
  readonly #attempts = new LRUCache<string, Map<string, UpstreamTokens>>({ max: MAX_ENTRIES, ttl: LEG_TTL_MS });
  readonly #grants = new LRUCache<string, Grant>({ max: MAX_ENTRIES });
  readonly #grantTtlMs: number;
  readonly #identities = new LRUCache<string, UpstreamIdentity>({ max: MAX_ENTRIES });

  /** `grantTtlMs`: how long a grant's upstream tokens are kept (the refresh token lifespan). */
  constructor(grantTtlMs: number, legs: PendingLegBounds) {
    this.#grantTtlMs = grantTtlMs;
    this.#legs = new MemoryPendingLegs(legs);
  }

  readonly #consents = new LRUCache<string, PendingConsent>({ max: MAX_ENTRIES, ttl: LEG_TTL_MS });

  async putConsent(uid: string, pending: PendingConsent): Promise<void> {
    this.#consents.set(uid, pending);
  }

  async peekConsent(uid: string): Promise<PendingConsent | null> {
    return this.#consents.get(uid) ?? null;
  }

  async takeConsent(uid: string): Promise<PendingConsent | null> {
    const pending = this.#consents.get(uid) ?? null;
    this.#consents.delete(uid);
    return pending;
  }

  putLeg(leg: PendingLeg): Promise<void> {
    return this.#legs.put(leg);
  }

  takeLeg(state: string): Promise<PendingLeg | null> {
    return this.#legs.take(state);
  }

  hasLeg(state: string): Promise<boolean> {
    return this.#legs.has(state);
  }

  async putTokens(attempt: string, provider: string, tokens: UpstreamTokens): Promise<void> {
    let byProvider = this.#attempts.get(attempt);
    if (byProvider === undefined) this.#attempts.set(attempt, (byProvider = new Map()));
    byProvider.set(provider, tokens);
  }

  async keepTokens(attempt: string, tsid: string, identity: UpstreamIdentity): Promise<void> {
    this.#grants.set(tsid, { tokens: this.#attempts.get(attempt) ?? new Map(), until: performance.now() + this.#grantTtlMs });
    this.#attempts.delete(attempt);
    this.#identities.set(identity.sub, identity);
  }

  async dropAttempt(attempt: string): Promise<void> {
    this.#attempts.delete(attempt);
  }

  async tokens(tsid: string, provider: string): Promise<UpstreamTokens | null> {
    return this.tokensInProcess(tsid, provider);
  }

  tokensInProcess(tsid: string, provider: string): UpstreamTokens | null {
    return this.#grant(tsid)?.get(provider) ?? null;
  }

  async updateTokens(tsid: string, provider: string, tokens: UpstreamTokens): Promise<void> {
    this.#grant(tsid)?.set(provider, tokens);
  }

  /**
   * The tokens of a grant still kept. Read on every request of upstreamInject: the grant keeps
   * the instant it ends and a read compares it with the clock; lru-cache only bounds the count
   * (its own per-entry TTL cost ~500 instructions a lookup under callgrind: two clock reads and
   * its staleness bookkeeping). A refresh does not extend the grant.
   */
  #grant(tsid: string): Map<string, UpstreamTokens> | undefined {
    const grant = this.#grants.get(tsid);
    if (grant === undefined) return undefined;
    if (performance.now() >= grant.until) {
      this.#grants.delete(tsid);
      return undefined;
    }
    return grant.tokens;
  }

  async dropGrant(tsid: string): Promise<void> {
    this.#grants.delete(tsid);
  }

  async identity(sub: string): Promise<UpstreamIdentity | null> {
    return this.#identities.get(sub) ?? null;
  }

  /** Test and status helper: how many attempts are in progress. */
  get attemptsInProgress(): number {
    return this.#attempts.size;
  }
}

/** Moves an attempt's tokens to its grant, with the grant's lifetime, in one step. */
const KEEP = `
local tokens = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
if #tokens > 0 then
  redis.call('HSET', KEYS[2], unpack(tokens))
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[1])
return #tokens / 2`;

/** Replaces one provider's tokens of a grant that still exists (its expiry unchanged). */
const UPDATE = `if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end return 0`;

/**
 * The login store in Redis (`authServerConfig.storage`): legs one per interaction, taken by a
 * script (one callback each, on any replica; pending-legs.ts), an attempt's and a grant's upstream tokens as hashes by
 * provider, identities by subject; every key with its expiry.
 */
export class RedisLoginStore implements LoginStore {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #grantTtlMs: number;
  /** Replicas exist (Sentinel): writes wait for one (redis-adapter.ts). */
  readonly #durable: boolean;
  readonly #legs: PendingLegs;

  constructor(client: Redis, keyPrefix: string, grantTtlMs: number, durable: boolean, legs: PendingLegBounds) {
    this.#client = client;
    this.#prefix = `${keyPrefix}auth:`;
    this.#grantTtlMs = grantTtlMs;
    this.#durable = durable;
    this.#legs = new RedisPendingLegs(client, this.#prefix, legs, durable);
  }

  async putConsent(uid: string, pending: PendingConsent): Promise<void> {
    await durably(this.#client, this.#durable, () => this.#client.set(`${this.#prefix}consent:${uid}`, JSON.stringify(pending), 'PX', LEG_TTL_MS));
  }

  async peekConsent(uid: string): Promise<PendingConsent | null> {
    const raw = await this.#client.get(`${this.#prefix}consent:${uid}`);
    return raw === null ? null : (JSON.parse(raw) as PendingConsent);
  }

  async takeConsent(uid: string): Promise<PendingConsent | null> {
    const raw = await this.#client.getdel(`${this.#prefix}consent:${uid}`);
    return raw === null ? null : (JSON.parse(raw) as PendingConsent);
  }

  putLeg(leg: PendingLeg): Promise<void> {
    return this.#legs.put(leg);
  }

  takeLeg(state: string): Promise<PendingLeg | null> {
    return this.#legs.take(state);
  }

  hasLeg(state: string): Promise<boolean> {
    return this.#legs.has(state);
  }

  async putTokens(attempt: string, provider: string, tokens: UpstreamTokens): Promise<void> {
    const key = `${this.#prefix}attempt:${attempt}`;
    await durably(this.#client, this.#durable, () => this.#client.multi().hset(key, provider, JSON.stringify(tokens)).pexpire(key, LEG_TTL_MS).exec());
  }

  async keepTokens(attempt: string, tsid: string, identity: UpstreamIdentity): Promise<void> {
    await durably(this.#client, this.#durable, () =>
      this.#client.eval(KEEP, 3, `${this.#prefix}attempt:${attempt}`, `${this.#prefix}tokens:${tsid}`, `${this.#prefix}identity:${identity.sub}`, String(this.#grantTtlMs), JSON.stringify(identity)),
    );
  }

  async dropAttempt(attempt: string): Promise<void> {
    await this.#client.del(`${this.#prefix}attempt:${attempt}`);
  }

  async tokens(tsid: string, provider: string): Promise<UpstreamTokens | null> {
    const raw = await this.#client.hget(`${this.#prefix}tokens:${tsid}`, provider);
    return raw === null ? null : (JSON.parse(raw) as UpstreamTokens);
  }

  async dropGrant(tsid: string): Promise<void> {
    await durably(this.#client, this.#durable, () => this.#client.del(`${this.#prefix}tokens:${tsid}`));
  }

  async updateTokens(tsid: string, provider: string, tokens: UpstreamTokens): Promise<void> {
    await durably(this.#client, this.#durable, () => this.#client.eval(UPDATE, 1, `${this.#prefix}tokens:${tsid}`, provider, JSON.stringify(tokens)));
  }

  /** Asked by the provider (the claims of the tokens it issues): a Redis failure is its 503. */
  async identity(sub: string): Promise<UpstreamIdentity | null> {
    const raw = await storage(() => this.#client.get(`${this.#prefix}identity:${sub}`));
    return raw === null ? null : (JSON.parse(raw) as UpstreamIdentity);
  }
}
