/**
 * When the primary of `server.workers` starts a worker again after it died, and when it gives up.
 *
 * A worker that dies is started again after a delay that doubles with each death of that worker
 * in a row (100 ms, 200 ms, 400 ms ... at most 10 s), so a worker that dies at once does not
 * spin; one that then serves for a minute starts the count again. Deaths are also counted over
 * every worker: more than `maxDeaths` within `windowMs` is a crash loop (a bad file, a backend
 * that crashes every worker, memory too tight), and the primary stops every worker and exits 1,
 * so that what supervises the gateway (Kubernetes, systemd) sees it fail instead of a gateway
 * that never serves for long.
 */

export interface RestartPolicyOptions {
  /** The first delay (default 100 ms). */
  readonly firstDelayMs?: number;
  /** The longest delay (default 10 s). */
  readonly maxDelayMs?: number;
  /** A worker up this long is healthy again: its next death waits the first delay (default 60 s). */
  readonly healthyAfterMs?: number;
  /** Deaths of any worker, within `windowMs`, past which the primary gives up (default 5 in 60 s). */
  readonly maxDeaths?: number;
  readonly windowMs?: number;
}

/** What to do with a worker that died: start it again after `delayMs`, or give up on them all. */
export type RestartDecision = { readonly restart: true; readonly delayMs: number } | { readonly restart: false; readonly reason: string };

export class RestartPolicy {
  readonly #firstDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #healthyAfterMs: number;
  readonly #maxDeaths: number;
  readonly #windowMs: number;
  /** When each recent death happened (any worker), oldest first. */
  readonly #deaths: number[] = [];
  /** Deaths in a row of each worker slot. */
  readonly #streaks = new Map<number, number>();

  constructor(options: RestartPolicyOptions = {}) {
    this.#firstDelayMs = options.firstDelayMs ?? 100;
    this.#maxDelayMs = options.maxDelayMs ?? 10_000;
    this.#healthyAfterMs = options.healthyAfterMs ?? 60_000;
    this.#maxDeaths = options.maxDeaths ?? 5;
    this.#windowMs = options.windowMs ?? 60_000;
  }

  /** The worker of `slot`, up for `upMs`, died at `now`. */
  died(slot: number, upMs: number, now: number): RestartDecision {
    this.#deaths.push(now);
    while (this.#deaths.length > 0 && this.#deaths[0]! <= now - this.#windowMs) this.#deaths.shift();
    if (this.#deaths.length > this.#maxDeaths) {
      return { restart: false, reason: `workers died ${this.#deaths.length} times within ${this.#windowMs / 1000} s (a crash loop): giving up` };
    }
    const streak = upMs >= this.#healthyAfterMs ? 1 : (this.#streaks.get(slot) ?? 0) + 1;
    this.#streaks.set(slot, streak);
    return { restart: true, delayMs: Math.min(this.#maxDelayMs, this.#firstDelayMs * 2 ** (streak - 1)) };
  }
}
