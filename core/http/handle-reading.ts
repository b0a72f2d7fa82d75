/**
 * A socket read by its HTTP parser directly, as node:http's server reads its sockets: the parser
 * becomes the listener of the socket's native handle (`consume`), so a read goes from libuv into
 * llhttp in C++ into one static buffer, and JavaScript is called for the parser's callbacks and
 * once after the read (`kOnExecute`). The alternative, 'data' events, costs a Buffer and its
 * allocation per read, the Readable stream's bookkeeping and a tick to read more: some 6,000
 * instructions of a request for the client's socket (bench/README.md). The own server's client
 * connections (wire/client-connection.ts) and the upstream client's plain-TCP connections
 * (core/upstream/backend-connection.ts) are read so.
 *
 * What changes with it: the socket's stream no longer sees the data, so pausing the stream alone
 * would not stop reading (the stream takes the handle back while reading is paused:
 * HandleReading), and the parser's callbacks run from C++ with nothing of JavaScript below them,
 * so whatever they start must not throw (an exception would reach the process), and the ticks
 * and microtasks they schedule run after each of them.
 */
import type { Socket } from 'node:net';
import { kOnExecute, type NativeParser } from './parser.ts';

/** The part of a TCP socket's native handle used here (net.Socket's `_handle`). */
interface StreamHandle {
  readonly isStreamBase?: boolean;
  /** Set by whoever made a parser the handle's reader (node:http marks it the same way). */
  _consumed?: boolean;
  /** net.Socket's own record of whether the handle reads. */
  reading: boolean;
  readStart(): number;
}

/**
 * Who reads a socket's handle: its parser (from `consume` on), or, while reading is paused, the
 * socket's stream, which holds what arrives up to its high-water mark and then stops reading,
 * and still sees the peer leave (a FIN, a reset); what it held reaches the parser through 'data'
 * when reading resumes, and the parser takes the handle back once the stream holds nothing.
 */
export class HandleReading {
  readonly #socket: Socket;
  readonly #parser: NativeParser;
  readonly #handle: StreamHandle;
  #parserReads = true;

  private constructor(socket: Socket, parser: NativeParser, handle: StreamHandle) {
    this.#socket = socket;
    this.#parser = parser;
    this.#handle = handle;
  }

  /**
   * Makes `parser` the reader of `socket`'s handle, `onExecute` told after each read; null when
   * the socket has no handle a parser can read (then it is fed from 'data' events).
   */
  static start<P extends NativeParser>(socket: Socket, parser: P, onExecute: (this: P, result: number | Error) => void): HandleReading | null {
    const handle = (socket as unknown as { _handle?: StreamHandle | null })._handle;
    if (handle == null || handle.isStreamBase !== true || handle._consumed === true) return null;
    handle._consumed = true;
    parser[kOnExecute] = onExecute;
    parser.consume(handle);
    return new HandleReading(socket, parser, handle);
  }

  /** Reading paused (or the parser about to be freed): the stream reads the handle. */
  toStream(): void {
    if (!this.#parserReads) return;
    this.#parserReads = false;
    this.#parser.unconsume();
  }

  /** The parser reads the handle again if the stream holds nothing more; whether it does now. */
  toParser(): boolean {
    if (this.#parserReads) return false;
    // Not while the stream holds data, nor while someone paused the socket (a plugin may).
    if (this.#socket.destroyed || this.#socket.readableLength !== 0 || this.#socket.isPaused()) return false;
    this.#parserReads = true;
    this.#parser.consume(this.#handle);
    const handle = this.#handle;
    if (!handle.reading) {
      handle.reading = true;
      handle.readStart();
    }
    return true;
  }
}
