/**
 * How fast clients may register (RFC 7591 is open to anyone): per client address, a fixed
 * window of REGISTRATIONS per WINDOW_MS; past it a 429 with Retry-After. The addresses kept are
 * bounded (the least recently seen go first), so a flood from many addresses costs memory once.
 */
import { LRUCache } from 'lru-cache';
import type { Context } from '../../core/context.ts';
import { Reply } from '../../core/reply.ts';

export const REGISTRATIONS = 10;
export const WINDOW_MS = 60_000;

interface Window {
  startedAt: number;
  count: number;
}

export class RegistrationLimit {
  readonly #windows = new LRUCache<string, Window>({ max: 50_000 });
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** The 429 for this request, or null when it may register. */
  check(ctx: Context): Reply | null {
    const key = ctx.req.socket.remoteAddress ?? 'unknown';
    const now = this.#now();
    let window = this.#windows.get(key);
    if (window === undefined || now - window.startedAt >= WINDOW_MS) this.#windows.set(key, (window = { startedAt: now, count: 0 }));
    if (++window.count <= REGISTRATIONS) return null;
    const retryAfter = Math.max(1, Math.ceil((window.startedAt + WINDOW_MS - now) / 1000));
    return Reply.json(
      429,
      { error: 'temporarily_unavailable', error_description: `too many client registrations from this address: at most ${REGISTRATIONS} a minute; retry after ${retryAfter} s` },
      { 'retry-after': String(retryAfter), 'cache-control': 'no-store' },
    );
  }
}
