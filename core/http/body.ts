/**
 * Reads a request body into one Buffer, refusing it with 413 the moment it is known to exceed
 * the cap: at once from `Content-Length`, or while reading a chunked body. The rest of an
 * oversize body is not read (the error reply closes the connection).
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../errors.ts';

function tooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', `request body exceeds the limit of ${limit} bytes`, {
    extra: { limit },
  });
}

/** State of one body read; module-level listeners find it on the request (no closures per request). */
class BodyRead {
  readonly limit: number;
  readonly chunks: Buffer[] = [];
  size = 0;
  resolve: (body: Buffer) => void;
  reject: (err: unknown) => void;

  constructor(limit: number, resolve: (body: Buffer) => void, reject: (err: unknown) => void) {
    this.limit = limit;
    this.resolve = resolve;
    this.reject = reject;
  }
}

const kRead = Symbol('gatehouse.bodyRead');
type Readable = IncomingMessage & { [kRead]?: BodyRead };

function onData(this: Readable, chunk: Buffer): void {
  const read = this[kRead]!;
  read.size += chunk.length;
  if (read.size > read.limit) {
    cleanup(this);
    this.pause();
    read.reject(tooLarge(read.limit));
    return;
  }
  read.chunks.push(chunk);
}

function onEnd(this: Readable): void {
  const read = this[kRead]!;
  cleanup(this);
  read.resolve(read.chunks.length === 1 ? read.chunks[0]! : Buffer.concat(read.chunks, read.size));
}

function onError(this: Readable, err: Error): void {
  const read = this[kRead]!;
  cleanup(this);
  read.reject(new GatewayError('invalid_request', 'the request body could not be read', { detail: err.message }));
}

function onAborted(this: Readable): void {
  const read = this[kRead];
  if (read === undefined) return;
  cleanup(this);
  read.reject(new GatewayError('invalid_request', 'the client closed the request before its body was complete'));
}

function cleanup(req: Readable): void {
  req.removeListener('data', onData);
  req.removeListener('end', onEnd);
  req.removeListener('error', onError);
  req.removeListener('close', onAborted);
  req[kRead] = undefined;
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined) {
    const length = Number(declared);
    if (!Number.isSafeInteger(length) || length < 0) {
      return Promise.reject(new GatewayError('invalid_request', 'Content-Length is not a valid length'));
    }
    if (length > limit) return Promise.reject(tooLarge(limit));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const r = req as Readable;
    r[kRead] = new BodyRead(limit, resolve, reject);
    r.on('data', onData);
    r.on('end', onEnd);
    r.on('error', onError);
    r.on('close', onAborted);
  });
}
