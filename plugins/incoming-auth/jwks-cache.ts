/**
 * The issuer's signing keys, cached (lru-cache, bounded, keyed by JWKS URL):
 *
 * - Fresh for the issuer's `Cache-Control: max-age`, clamped to [min, max] (a default when the
 *   header has none; `no-store` gets the minimum): an issuer cannot make us fetch per request,
 *   nor keep a key set forever.
 * - Stale keys keep verifying while a refresh runs in the background, and while the issuer is
 *   unreachable: an outage of the issuer does not break tokens whose keys we hold.
 * - Fetches are coalesced (one in flight per URL) and rate-limited: at most one attempt per
 *   cooldown, whether for a stale set, a failed first fetch, or a token with an unknown `kid`
 *   (`refreshForUnknownKey`). A storm of tokens with random `kid`s costs one fetch per cooldown.
 *
 * The clock is injected, so tests move time without waiting.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { keySetOf, type KeySet } from './key-set.ts';
import { IssuerFetchError } from './issuer-http.ts';

export interface FetchedJwks {
  readonly json: unknown;
  readonly cacheControl: string | null;
}

export interface JwksCacheOptions {
  readonly fetch: (uri: string) => Promise<FetchedJwks>;
  readonly now: () => number;
  readonly log: Logger;
  readonly minAgeMs: number;
  readonly maxAgeMs: number;
  readonly defaultAgeMs: number;
  readonly cooldownMs: number;
}

interface Entry {
  readonly keys: KeySet;
  readonly freshUntil: number;
}

interface FetchState {
  lastAttemptAt: number;
  inflight: Promise<Entry> | null;
}

/** Seconds of `max-age` in a Cache-Control value; 0 for `no-store` / `no-cache`; null when absent. */
export function maxAgeOf(cacheControl: string | null): number | null {
  if (cacheControl === null) return null;
  if (/(?:^|[,\s])no-(?:store|cache)\b/i.test(cacheControl)) return 0;
  const match = /(?:^|[,\s])max-age\s*=\s*"?(\d+)"?/i.exec(cacheControl);
  return match === null ? null : Number(match[1]);
}

export class JwksCache {
  readonly #options: JwksCacheOptions;
  readonly #sets = new LRUCache<string, Entry>({ max: 8 });
  readonly #fetches = new LRUCache<string, FetchState>({ max: 8 });
  /** How many fetches were started (tests and metrics). */
  fetchCount = 0;

  constructor(options: JwksCacheOptions) {
    this.#options = options;
  }

  /** How long a key set fetched with this Cache-Control stays fresh, ms. */
  freshnessMs(cacheControl: string | null): number {
    const { minAgeMs, maxAgeMs, defaultAgeMs } = this.#options;
    const maxAge = maxAgeOf(cacheControl);
    const ms = maxAge === null ? defaultAgeMs : maxAge * 1000;
    return Math.min(maxAgeMs, Math.max(minAgeMs, ms));
  }

  /** The keys at `uri` while they are fresh, synchronously; undefined otherwise (then call `keys`). */
  fresh(uri: string): KeySet | undefined {
    const entry = this.#sets.get(uri);
    return entry !== undefined && this.#options.now() < entry.freshUntil ? entry.keys : undefined;
  }

  /** The keys at `uri`: fresh or stale from the cache, else fetched (waiting for it). */
  async keys(uri: string): Promise<KeySet> {
    const entry = this.#sets.get(uri);
    const state = this.#state(uri);
    if (entry !== undefined) {
      if (this.#options.now() < entry.freshUntil) return entry.keys;
      // Stale: serve it, and refresh in the background at most once per cooldown.
      if (state.inflight === null && this.#mayAttempt(state)) this.#refresh(uri, state).catch(() => undefined);
      return entry.keys;
    }
    if (state.inflight !== null) return (await state.inflight).keys;
    if (!this.#mayAttempt(state)) {
      throw new IssuerFetchError(`the issuer's keys are unavailable: the last fetch of ${uri} failed less than ${this.#options.cooldownMs / 1000}s ago`);
    }
    return (await this.#refresh(uri, state)).keys;
  }

  /**
   * A token names a key we do not hold: refetch now, unless a fetch happened within the cooldown.
   * Resolves to the new keys, or null when in cooldown (the kid is then unknown). Rejects when
   * the fetch fails.
   */
  async refreshForUnknownKey(uri: string): Promise<KeySet | null> {
    const state = this.#state(uri);
    if (state.inflight !== null) return (await state.inflight).keys;
    if (!this.#mayAttempt(state)) return null;
    return (await this.#refresh(uri, state)).keys;
  }

  #state(uri: string): FetchState {
    let state = this.#fetches.get(uri);
    if (state === undefined) {
      state = { lastAttemptAt: Number.NEGATIVE_INFINITY, inflight: null };
      this.#fetches.set(uri, state);
    }
    return state;
  }

  #mayAttempt(state: FetchState): boolean {
    return this.#options.now() - state.lastAttemptAt >= this.#options.cooldownMs;
  }

  #refresh(uri: string, state: FetchState): Promise<Entry> {
    const { now, log } = this.#options;
    state.lastAttemptAt = now();
    this.fetchCount++;
    const inflight = this.#options.fetch(uri).then(
      async ({ json, cacheControl }) => {
        const entry: Entry = { keys: await keySetOf(json), freshUntil: now() + this.freshnessMs(cacheControl) };
        this.#sets.set(uri, entry);
        log.debug({ jwksUri: uri, keys: entry.keys.size, algorithms: entry.keys.algorithms }, 'fetched the issuer keys');
        return entry;
      },
    );
    state.inflight = inflight;
    const settle = (): void => {
      if (state.inflight === inflight) state.inflight = null;
    };
    inflight.then(settle, (err: unknown) => {
      settle();
      const stale = this.#sets.get(uri) !== undefined;
      log.warn({ jwksUri: uri, err: err instanceof Error ? err.message : String(err), servingStaleKeys: stale }, 'fetching the issuer keys failed');
    });
    return inflight;
  }
}
