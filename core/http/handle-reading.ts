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
 * What changes with it: the socket's stream no longer sees the data, so pausing it does not stop
 * reading (the handle is stopped here), and the parser's callbacks run from C++ with nothing of
 * JavaScript below them, so whatever they start must not throw (an exception would reach the
 * process), and the ticks and microtasks they schedule run after each of them.
 */
import type { Socket } from 'node:net';
import { kOnExecute, type NativeParser } from './parser.ts';

/** The part of a TCP socket's native handle used here (net.Socket's `_handle`). */
export interface StreamHandle {
  readonly isStreamBase?: boolean;
  /** Set by whoever made a parser the handle's reader (node:http marks it the same way). */
  _consumed?: boolean;
  /** net.Socket's own record of whether the handle reads. */
  reading: boolean;
  readStart(): number;
  readStop(): number;
}

/**
 * Makes `parser` the reader of `socket`'s handle, `onExecute` told after each read; the handle,
 * or null when the socket has none a parser can read (then it is fed from 'data' events).
 */
export function readThroughParser<P extends NativeParser>(socket: Socket, parser: P, onExecute: (this: P, result: number | Error) => void): StreamHandle | null {
  const handle = (socket as unknown as { _handle?: StreamHandle | null })._handle;
  if (handle == null || handle.isStreamBase !== true || handle._consumed === true) return null;
  handle._consumed = true;
  parser[kOnExecute] = onExecute;
  parser.consume(handle);
  return handle;
}

export function stopHandle(handle: StreamHandle): void {
  if (!handle.reading) return;
  handle.reading = false;
  handle.readStop();
}

export function startHandle(handle: StreamHandle): void {
  if (handle.reading) return;
  handle.reading = true;
  handle.readStart();
}
