/**
 * How fast one client address may use an open endpoint of the authorization server
 * (registration: RFC 7591 is open to anyone; authorization: each request stores an interaction):
 * a fixed window of `limit` requests per WINDOW_MS per address; past it a 429 with Retry-After.
 * The addresses kept are bounded (the least recently seen go first), so a flood from many
 * addresses costs memory once. An IPv6 client counts by its /64 (what one subscriber holds).
 * Behind a proxy listed in `server.trustedProxies` the client is the address its X-Forwarded-For
 * names; behind any other, every client shares the proxy's address and the limits are per
 * gateway, which still bounds what one flood can store.
 */
import { LRUCache } from 'lru-cache';
import type { Context } from '../../core/context.ts';
import { limitKey } from '../../core/http/client-address.ts';
import { Reply } from '../../core/reply.ts';

/** Client registrations per address per window. */
export const REGISTRATIONS = 10;
/** Authorization requests per address per window. */
export const AUTHORIZATIONS = 60;
/** Token requests (codes, refreshes) per address per window. */
export const TOKEN_REQUESTS = 300;
export const WINDOW_MS = 60_000;

interface Window {
  startedAt: number;
  count: number;
}

export class AddressLimit {
  readonly #windows = new LRUCache<string, Window>({ max: 50_000 });
  readonly #limit: number;
  /** What is limited, for the refusal's description ("client registrations"). */
  readonly #what: string;
  readonly #now: () => number;

  constructor(limit: number, what: string, now: () => number = Date.now) {
    this.#limit = limit;
    this.#what = what;
    this.#now = now;
  }

  /** The 429 for this request, or null when it may go on. */
  check(ctx: Context): Reply | null {
    const key = limitKey(ctx.clientAddress);
    const now = this.#now();
    let window = this.#windows.get(key);
    if (window === undefined || now - window.startedAt >= WINDOW_MS) this.#windows.set(key, (window = { startedAt: now, count: 0 }));
    if (++window.count <= this.#limit) return null;
    const retryAfter = Math.max(1, Math.ceil((window.startedAt + WINDOW_MS - now) / 1000));
    return Reply.json(
      429,
      { error: 'temporarily_unavailable', error_description: `too many ${this.#what} from this address: at most ${this.#limit} a minute; retry after ${retryAfter} s` },
      { 'retry-after': String(retryAfter), 'cache-control': 'no-store' },
    );
  }
}
