/**
 * A write handed to a socket's native handle directly, as the socket's stream would hand it, but
 * without the stream's bookkeeping around it: a `write()` on a net.Socket goes through the
 * Writable's state machine (length, buffering, corking), a request object per write, and, when
 * the kernel takes the bytes at once, a tick (`afterWriteTick`) to call back. For the one or two
 * writes of a small exchange that bookkeeping is most of what the write costs (bench/README.md).
 *
 * Taken only when the socket's stream holds nothing and libuv has nothing queued, so the bytes
 * cannot overtake earlier ones; otherwise the caller writes through the stream as before. What
 * the kernel does not take at once is queued by libuv (as the stream's own writes are), and the
 * caller is told when it is out. The stream never sees these bytes: whoever writes so keeps its
 * own backpressure (the write reports QUEUED) and ends the socket through the stream as usual
 * (libuv shuts the socket down after what it has queued).
 *
 * Reached through `process.binding('stream_wrap')`, the binding net.Socket writes with (not a
 * documented API: its shape is checked at load, and Gatehouse runs on Node 20 and 22, where the
 * tests hold it to these semantics). Where a Node release does not offer it, or refuses it (run
 * with `--pending-deprecation`, Node warns once about process.binding, DEP0111; with
 * `--throw-deprecation` too, it throws), every write goes through the stream.
 */
import type { Socket } from 'node:net';
import process from 'node:process';
import { getSystemErrorName } from 'node:util';

/** The write was not made: write through the stream. */
export const NOT_WRITTEN = 0;
/** The kernel took every byte. */
export const WRITTEN = 1;
/** libuv holds what the kernel did not take yet; the completion is told when it is out. */
export const QUEUED = 2;
/** The handle refused the write (the peer is gone): the socket is destroyed with the error. */
export const FAILED = 3;

/** Told when a QUEUED write is out (error null) or failed (the socket is being destroyed with it). */
export type WriteCompletion = (socket: Socket, tag: number, error: Error | null) => void;

/** The part of a TCP socket's native handle used here (net.Socket's `_handle`). */
interface WritableHandle {
  readonly writeQueueSize: number;
  writeLatin1String(req: WriteRequest, data: string): number;
  writeBuffer(req: WriteRequest, data: Buffer): number;
}

/** The request object libuv's write completion is reported on (`oncomplete`). */
interface WriteRequest {
  oncomplete: (this: WriteRequest, status: number) => void;
  socket: Socket | null;
  buffer: Buffer | null;
  completion: WriteCompletion | null;
  tag: number;
}

interface StreamWrapBinding {
  WriteWrap: new () => WriteRequest;
  streamBaseState: Int32Array;
  kLastWriteWasAsync: number;
}

const binding = loadBinding();
const lastWriteWasAsync = binding === null ? 0 : binding.kLastWriteWasAsync;

/**
 * A write the kernel takes whole never touches its request object (libuv only binds one it has
 * to queue), so one spare serves every such write; a queued write keeps it and the next write
 * makes another.
 */
let spare: WriteRequest | null = null;

function loadBinding(): StreamWrapBinding | null {
  try {
    const candidate = (process as unknown as { binding(name: string): Partial<StreamWrapBinding> }).binding('stream_wrap');
    if (typeof candidate.WriteWrap !== 'function' || !(candidate.streamBaseState instanceof Int32Array) || typeof candidate.kLastWriteWasAsync !== 'number') return null;
    return candidate as StreamWrapBinding;
  } catch {
    return null;
  }
}

function newRequest(): WriteRequest {
  const req = new binding!.WriteWrap();
  req.oncomplete = onComplete;
  req.socket = null;
  req.buffer = null;
  req.completion = null;
  req.tag = 0;
  return req;
}

function onComplete(this: WriteRequest, status: number): void {
  const socket = this.socket!;
  const completion = this.completion;
  this.socket = null;
  this.buffer = null;
  this.completion = null;
  if (socket.destroyed) return;
  const error = status < 0 ? writeError(status) : null;
  if (error !== null) socket.destroy(error);
  if (completion === null) return;
  // Called from libuv with nothing of JavaScript below: what the completion throws ends the socket, not the process.
  try {
    completion(socket, this.tag, error);
  } catch (thrown) {
    socket.destroy(thrown instanceof Error ? thrown : new Error(String(thrown)));
  }
}

/** The error a failed write reports, as the stream's would: `write EPIPE`, code EPIPE. */
function writeError(status: number): Error {
  let code = 'EWRITE';
  try {
    code = getSystemErrorName(status);
  } catch {
    // not a system error number: the generic code stands
  }
  return Object.assign(new Error(`write ${code}`), { errno: status, code, syscall: 'write' });
}

/** Bytes libuv holds for `socket` that the kernel has not taken yet (0 without a handle). */
export function queuedBytes(socket: Socket): number {
  const handle = (socket as unknown as { _handle?: WritableHandle | null })._handle;
  return handle == null ? 0 : handle.writeQueueSize;
}

/**
 * Writes `data` (a string: latin1, a byte a character) to `socket`'s handle if nothing is ahead
 * of it; `completion` is told, with `tag`, when a QUEUED write is out. A write the handle
 * refuses at once destroys the socket with the error (as the stream would) and reports FAILED:
 * the socket's 'close' tells the rest.
 */
export function writeToHandle(socket: Socket, data: string | Buffer, completion: WriteCompletion | null, tag: number): number {
  if (binding === null) return NOT_WRITTEN;
  const handle = (socket as unknown as { _handle?: WritableHandle | null })._handle;
  if (handle == null || socket.connecting || socket.destroyed || socket.writableEnded || socket.writableLength !== 0 || socket.writableCorked !== 0 || handle.writeQueueSize !== 0) {
    return NOT_WRITTEN;
  }
  const req = spare ?? newRequest();
  const status = typeof data === 'string' ? handle.writeLatin1String(req, data) : handle.writeBuffer(req, data);
  if (status !== 0) {
    spare = null; // libuv may have bound it before refusing
    socket.destroy(writeError(status));
    return FAILED;
  }
  if (binding.streamBaseState[lastWriteWasAsync] === 0) {
    spare = req;
    return WRITTEN;
  }
  spare = null;
  req.socket = socket;
  // libuv holds a pointer into a Buffer (a string it copied): the Buffer must outlive the write.
  if (typeof data !== 'string') req.buffer = data;
  req.completion = completion;
  req.tag = tag;
  return QUEUED;
}
