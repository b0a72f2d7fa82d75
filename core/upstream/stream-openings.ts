/**
 * Order toward a backend within one session: what the client sent first is in place at the
 * backend first. A client opens its session's GET stream and then calls a tool whose server
 * asks something on that stream (a `server.request()` with no related request: sampling,
 * elicitation); the server finds no stream and drops the request, and the call hangs, if the
 * call reaches it before the stream does — which, through a proxy, it easily can: the call rides
 * a kept-alive connection while the stream needs a new one. So a GET stream on its way to a
 * backend is an opening, and the session's later requests wait until it is established there
 * (its response head arrived) or failed. That is one wait at the session's start (or after a
 * stream dropped), never one per request: while no stream is opening, the check is one size read.
 *
 * Bounded: an opening lives until the backend's response head, its failure or the client leaving,
 * and at most OPENING_WAIT_MS (a server that holds its stream's head back until it has an event
 * to send must not hold the session's calls back with it); what waits on it is the session's own
 * requests (`maxSessionRequests`).
 */

/** The longest a request waits for its session's stream to be established at the backend. */
export const OPENING_WAIT_MS = 2_000;

/** One GET stream on its way to a backend: settled once its head arrived, or it failed. */
export class StreamOpening {
  /** Resolves when the stream is established at the backend, or will never be. */
  readonly established: Promise<void>;
  #settle!: () => void;
  #settled = false;
  readonly #onSettled: (() => void) | null;
  readonly #timer: NodeJS.Timeout;

  constructor(onSettled: (() => void) | null = null, waitMs = OPENING_WAIT_MS) {
    this.#onSettled = onSettled;
    this.established = new Promise<void>((resolve) => (this.#settle = resolve));
    this.#timer = setTimeout(() => this.settle(), waitMs);
    this.#timer.unref();
  }

  settle(): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#settle();
    this.#onSettled?.();
  }
}

/** The streams being opened, by key (a session id, or a backend of one): what later requests wait for. */
export class StreamOpenings<K> {
  readonly #pending = new Map<K, StreamOpening>();

  /** Whether no stream is being opened (the hot path's one check). */
  get none(): boolean {
    return this.#pending.size === 0;
  }

  /** A stream of `key` is on its way: requests of `key` wait for it from now on. */
  begin(key: K): StreamOpening {
    const opening: StreamOpening = new StreamOpening(() => {
      if (this.#pending.get(key) === opening) this.#pending.delete(key);
    });
    this.#pending.set(key, opening);
    return opening;
  }

  /** What a request of `key` waits for before it is sent: null when no stream of `key` is being opened. */
  awaited(key: K): Promise<void> | null {
    return this.#pending.get(key)?.established ?? null;
  }

  /** Settles every opening (shutdown): nothing waits for them any more. */
  settleAll(): void {
    for (const opening of [...this.#pending.values()]) opening.settle();
  }
}
