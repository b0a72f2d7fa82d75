/**
 * Whether the client of a connection takes what is written to it: since when a write found the
 * socket's buffer full (until it drains), and whether bytes went out since then. The server's
 * send timeout (server.ts, nginx's send_timeout) drops a reader that stopped, not a slow one.
 */
import type { Socket } from 'node:net';
import { queuedBytes } from '../handle-writing.ts';

export class SendProgress {
  readonly #socket: Socket;
  /** performance.now() when a write last found the socket's buffer full, until it drains (0: not blocked). */
  blockedSince = 0;
  /** Bytes of a write handed to the handle that libuv holds (handle-writing.ts), until it is out: the stream does not count them. */
  directQueued = 0;
  /** `#unsent()` when `blockedSince` was last set or renewed. */
  #sentWhenBlocked = 0;

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  /** What waits for the client that a writer ignoring 'drain' could pile up: the stream's buffer, and a queued direct write. */
  get buffered(): number {
    return this.#socket.writableLength + this.directQueued;
  }

  /** A write found the buffer full at `now` (blocked since then, unless it was already). */
  blocked(now: number): void {
    if (this.blockedSince !== 0) return;
    this.blockedSince = now;
    this.#sentWhenBlocked = this.#unsent();
  }

  /**
   * Bytes not yet taken by the kernel: what waits in the socket's buffer, and what libuv still
   * holds of the write under way (which shrinks as a large write goes out in parts, where
   * `writableLength` only moves when a whole write completes).
   */
  #unsent(): number {
    return this.#socket.writableLength + queuedBytes(this.#socket) - this.#socket.bytesWritten;
  }

  /** Whether the client took bytes since the connection was last found blocked (and notes where it is now). */
  sentSinceBlocked(): boolean {
    const unsent = this.#unsent();
    if (unsent === this.#sentWhenBlocked) return false;
    this.#sentWhenBlocked = unsent;
    return true;
  }
}
