/**
 * What pipelined responses wrote while an earlier response of their connection was still being
 * written: HTTP/1.1 answers in request order, so a later answer that is ready first waits here,
 * within bounds, until the ones before it are on the wire (client-connection.ts).
 */
import { Buffer } from 'node:buffer';

/**
 * Bytes a pipelined response may hold while an earlier one is still being written (an SSE stream
 * in front never ends): past it, its writes report backpressure, so the backend behind it pauses.
 */
const HELD_SOFT_LIMIT = 64 * 1024;
/** Bytes all held responses of a connection may total before the connection is cut. */
const HELD_HARD_LIMIT = 16 * 1024 * 1024;

/** One response's held writes. */
export interface Held {
  readonly data: (string | Buffer)[];
  bytes: number;
  /** The response ended. */
  last: boolean;
  /** Its writer was told to wait: it is told 'drain' once its bytes are written. */
  waiting: boolean;
}

/** Whether a held write may go on (true), must wait for 'drain' (false), or cut the connection (null). */
export type HoldVerdict = boolean | null;

export class HeldResponses<R extends object> {
  readonly #held = new Map<R, Held>();
  #bytes = 0;

  hold(response: R, data: string | Buffer, last: boolean): HoldVerdict {
    let held = this.#held.get(response);
    if (held === undefined) this.#held.set(response, (held = { data: [], bytes: 0, last: false, waiting: false }));
    if (data.length > 0) {
      held.data.push(data);
      held.bytes += data.length;
      this.#bytes += data.length;
      if (this.#bytes > HELD_HARD_LIMIT) return null;
    }
    held.last ||= last;
    if (held.bytes <= HELD_SOFT_LIMIT) return true;
    held.waiting = true;
    return false;
  }

  /** What `response` held, joined into one write, and no longer held; undefined when it held nothing. */
  take(response: R): { data: string | Buffer; held: Held } | undefined {
    const held = this.#held.get(response);
    if (held === undefined) return undefined;
    this.drop(response);
    const data = held.data.length === 0 ? '' : held.data.length === 1 ? held.data[0]! : Buffer.concat(held.data.map((d) => (typeof d === 'string' ? Buffer.from(d, 'latin1') : d)));
    return { data, held };
  }

  drop(response: R): void {
    const held = this.#held.get(response);
    if (held === undefined) return;
    this.#held.delete(response);
    this.#bytes -= held.bytes;
  }

  clear(): void {
    this.#held.clear();
    this.#bytes = 0;
  }
}
