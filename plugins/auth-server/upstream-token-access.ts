/**
 * The upstream tokens of a login, as the plugins that present them to backends read them (the
 * token set id `tsid` of the caller's JWT, and a provider's name): the stored access token, or,
 * when it expires within REFRESH_SKEW_MS, a refreshed one. However many requests need the same
 * token at once, one refresh runs: in this process a shared promise, across replicas (Redis)
 * a lock key, the others waiting for its result. A refresh token the provider does not rotate
 * is carried forward.
 *
 * When no refresh can help (no refresh token, the provider refuses it, the login is gone) the
 * caller gets 401 invalid_token, "re-authentication required", so the client logs in again;
 * when the storage cannot be reached, 503.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { GatewayError } from '@gatehouse-mcp/gateway';
import type { LoginStore } from './login-store.ts';
import type { UpstreamProvider, UpstreamTokens } from './upstream-providers.ts';

/** A token expiring sooner than this is refreshed first. */
export const REFRESH_SKEW_MS = 30_000;
/** How long one replica may hold a refresh (and the others wait for it). */
const LOCK_MS = 10_000;
const POLL_MS = 50;

/** Across replicas: who refreshes a token now. The memory one is for a single process. */
export interface RefreshLock {
  /** A release function when this caller refreshes; null when another one does. */
  acquire(key: string): Promise<(() => Promise<void>) | null>;
}

export class MemoryRefreshLock implements RefreshLock {
  async acquire(): Promise<() => Promise<void>> {
    return async () => undefined;
  }
}

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

export class RedisRefreshLock implements RefreshLock {
  readonly #client: Redis;
  readonly #prefix: string;

  constructor(client: Redis, keyPrefix: string) {
    this.#client = client;
    this.#prefix = `${keyPrefix}auth:refresh-lock:`;
  }

  async acquire(key: string): Promise<(() => Promise<void>) | null> {
    const owner = randomBytes(16).toString('base64url');
    const lockKey = this.#prefix + key;
    if ((await this.#client.set(lockKey, owner, 'PX', LOCK_MS, 'NX')) !== 'OK') return null;
    return async () => {
      await this.#client.eval(RELEASE, 1, lockKey, owner);
    };
  }
}

function reauthenticate(provider: string, why: string): GatewayError {
  return new GatewayError('invalid_token', 'upstream token is no longer valid; re-authentication required', { detail: `${provider}: ${why}`, extra: { provider } });
}

function storageDown(err: unknown): GatewayError {
  // Retry-After: a failover of the storage takes a few seconds (an aggregated group answers the
  // backend's call with a JSON-RPC error of the same code, data.error not_ready, instead).
  return new GatewayError('not_ready', 'the authorization server\'s storage cannot be reached', { detail: err instanceof Error ? err.message : String(err), cause: err, headers: { 'retry-after': '1' } });
}

export class UpstreamTokenAccess {
  readonly #store: LoginStore;
  readonly #providers: ReadonlyMap<string, UpstreamProvider>;
  readonly #lock: RefreshLock;
  readonly #log: Logger;
  readonly #now: () => number;
  /** Refreshes under way in this process, by `tsid provider`. */
  readonly #refreshing = new Map<string, Promise<UpstreamTokens>>();

  constructor(store: LoginStore, providers: readonly UpstreamProvider[], lock: RefreshLock, log: Logger, now: () => number = Date.now) {
    this.#store = store;
    this.#providers = new Map(providers.map((p) => [p.name, p]));
    this.#lock = lock;
    this.#log = log;
    this.#now = now;
  }

  /** The access token of `provider` for the login `tsid`, fresh for at least the skew (see #expiring). */
  async accessToken(tsid: string, provider: string): Promise<string> {
    const tokens = await this.#read(tsid, provider);
    if (!this.#expiring(tokens)) return tokens.accessToken;
    const key = `${tsid} ${provider}`;
    let refresh = this.#refreshing.get(key);
    if (refresh === undefined) {
      refresh = this.#refresh(tsid, provider, tokens).finally(() => this.#refreshing.delete(key));
      this.#refreshing.set(key, refresh);
    }
    return (await refresh).accessToken;
  }

  /**
   * Whether `tokens` expire within the skew: REFRESH_SKEW_MS, or half their lifetime when that is
   * shorter (a provider whose tokens live 10 s would otherwise be asked for a refresh on every call).
   */
  /**
   * The access token of `provider` for `tsid` when it can be had at once: the store holds it in
   * this process and it is fresh. Otherwise undefined: ask `accessToken`, which reads, refreshes
   * and says why there is none.
   */
  freshAccessToken(tsid: string, provider: string): string | undefined {
    const tokens = this.#store.tokensInProcess?.(tsid, provider);
    return tokens == null || this.#expiring(tokens) ? undefined : tokens.accessToken;
  }

  #expiring(tokens: UpstreamTokens): boolean {
    if (tokens.expiresAt === null) return false;
    const skew = tokens.obtainedAt === undefined ? REFRESH_SKEW_MS : Math.min(REFRESH_SKEW_MS, (tokens.expiresAt - tokens.obtainedAt) / 2);
    return tokens.expiresAt - this.#now() < skew;
  }

  async #read(tsid: string, provider: string): Promise<UpstreamTokens> {
    let tokens: UpstreamTokens | null;
    try {
      tokens = await this.#store.tokens(tsid, provider);
    } catch (err) {
      throw storageDown(err);
    }
    if (tokens === null) throw reauthenticate(provider, 'no tokens are kept for this login');
    return tokens;
  }

  async #refresh(tsid: string, name: string, stale: UpstreamTokens): Promise<UpstreamTokens> {
    const provider = this.#providers.get(name);
    if (provider === undefined) throw reauthenticate(name, 'the provider is no longer configured');
    let release: (() => Promise<void>) | null;
    try {
      release = await this.#lock.acquire(`${tsid}:${name}`);
    } catch (err) {
      throw storageDown(err);
    }
    if (release === null) return this.#awaitOther(tsid, name, stale);
    try {
      // Another replica may have refreshed between our read and our lock.
      const current = await this.#read(tsid, name);
      if (!this.#expiring(current)) return current;
      if (current.refreshToken === null) throw reauthenticate(name, 'the access token expired and the provider gave no refresh token');
      let fresh: UpstreamTokens;
      try {
        fresh = await provider.refresh(current.refreshToken);
      } catch (err) {
        this.#log.info({ provider: name, err: err instanceof Error ? err.message : String(err) }, 'an upstream refresh token was refused');
        throw reauthenticate(name, 'the provider refused the refresh token');
      }
      // A provider that does not rotate refresh tokens sends none back: the old one still holds.
      const kept: UpstreamTokens = { ...fresh, refreshToken: fresh.refreshToken ?? current.refreshToken };
      try {
        await this.#store.updateTokens(tsid, name, kept);
      } catch (err) {
        throw storageDown(err);
      }
      return kept;
    } finally {
      await release().catch(() => undefined);
    }
  }

  /** Another replica refreshes: its result is read back once it is stored (or the lock lapses). */
  async #awaitOther(tsid: string, name: string, stale: UpstreamTokens): Promise<UpstreamTokens> {
    const deadline = this.#now() + LOCK_MS;
    while (this.#now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      const current = await this.#read(tsid, name);
      if (current.accessToken !== stale.accessToken) return current;
    }
    throw reauthenticate(name, 'the refresh by another replica did not finish in time');
  }
}

/**
 * The accessor of the running authorization server, for plugins created alongside it: filled
 * when the server is created, empty when none is configured.
 */
export class UpstreamTokenHandle {
  #access: UpstreamTokenAccess | null = null;

  set(access: UpstreamTokenAccess): void {
    this.#access = access;
  }

  get(): UpstreamTokenAccess {
    if (this.#access === null) throw new Error('no embedded authorization server is running');
    return this.#access;
  }
}
