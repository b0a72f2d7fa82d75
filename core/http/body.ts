/**
 * Reads a request body into one Buffer, refusing it with 413 the moment it is known to exceed
 * the cap: at once from `Content-Length`, or while reading a chunked body. The rest of an
 * oversize body is not read (the error reply closes the connection).
 *
 * `readBodyInto` is the callback form used on the hot path (no promise, no closure: Gatehouse's
 * own request hands the body to the read's state itself, and node:http's request to listeners
 * that are module functions finding that state on it); `readBody` is the promise form for
 * plugin routes.
 */
import { Buffer } from 'node:buffer';
import type { BodyReader, HttpRequest } from './types.ts';
import { GatewayError } from '../base/errors.ts';
import type { RequestRecord } from '../observe/request-record.ts';
import { currentRequest, runInRequest } from '../observe/request-scope.ts';

/** Receives the body (or the reason there is none) for `state`. */
export interface BodySink<S> {
  body(state: S, body: Buffer): void;
  bodyFailed(state: S, error: GatewayError): void;
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('payload_too_large', `request body exceeds the limit of ${limit} bytes`, { extra: { limit } });
}

/** A body chunk shorter than this is copied into a block rather than kept as it came. */
const SMALL_CHUNK = 1024;
/** The size of those blocks. */
const BLOCK = 16 * 1024;

/**
 * One body being read for `sink`: told the chunks, the end or the failure, by the request itself
 * (readInto: Gatehouse's own server) or by module-level listeners (node:http's request), so
 * either way there is no closure a request. The sink is told once, whatever happens after.
 *
 * Chunks after the first are kept as they came only when they are large: a chunked body of
 * 1-byte chunks would otherwise hold a Buffer object (~200 bytes of heap) for every byte, some
 * 800 MB for a body under a 4 MiB limit. Small ones are copied into blocks, so what a body holds
 * stays near its size.
 */
class BodyRead<S> implements BodyReader {
  readonly limit: number;
  readonly sink: BodySink<S>;
  readonly state: S;
  /**
   * The request whose work reads the body, while requests are scoped (request-scope.ts: the
   * tracer): the body's end may come with a later read of the socket, outside that work, and
   * what the sink starts then (the backend call) is still the request's.
   */
  readonly record: RequestRecord | undefined;
  chunk0: Buffer | null = null;
  chunks: Buffer[] | null = null;
  size = 0;
  /** The block small chunks are being copied into, and how much of it they fill. */
  block: Buffer | null = null;
  filled = 0;
  told = false;

  constructor(limit: number, sink: BodySink<S>, state: S) {
    this.limit = limit;
    this.sink = sink;
    this.state = state;
    this.record = currentRequest();
  }

  /** Tells the sink, once, as work of the request that reads the body. */
  #tell(body: Buffer | null, error: GatewayError | null): void {
    if (this.told) return;
    this.told = true;
    const record = this.record;
    if (record !== undefined && currentRequest() !== record) runInRequest(record, () => this.#answer(body, error));
    else this.#answer(body, error);
  }

  #answer(body: Buffer | null, error: GatewayError | null): void {
    if (error !== null) this.sink.bodyFailed(this.state, error);
    else this.sink.body(this.state, body!);
  }

  chunk(chunk: Buffer): boolean {
    if (this.told) return false;
    this.size += chunk.length;
    if (this.size > this.limit) {
      this.#tell(null, tooLarge(this.limit));
      return false;
    }
    if (this.chunk0 === null) {
      this.chunk0 = chunk;
      return true;
    }
    const chunks = (this.chunks ??= [this.chunk0]);
    let block = this.block;
    if (chunk.length >= SMALL_CHUNK) {
      // What the block holds goes first, copied to its size: the block is used again, so small
      // and large chunks in turn do not leave a block behind each time.
      if (this.filled > 0) chunks.push(Buffer.from(block!.subarray(0, this.filled)));
      this.filled = 0;
      chunks.push(chunk);
      return true;
    }
    if (block === null || this.filled + chunk.length > block.length) {
      if (block !== null) chunks.push(block.subarray(0, this.filled));
      block = this.block = Buffer.allocUnsafe(BLOCK);
      this.filled = 0;
    }
    this.filled += chunk.copy(block, this.filled);
    return true;
  }

  end(): void {
    const chunks = this.chunks;
    if (chunks === null) {
      this.#tell(this.chunk0 ?? EMPTY, null);
      return;
    }
    if (this.filled > 0) chunks.push(this.block!.subarray(0, this.filled));
    this.#tell(Buffer.concat(chunks, this.size), null);
  }

  failed(error: Error | undefined): void {
    if (error === undefined) {
      this.#tell(null, new GatewayError('invalid_request', 'the client closed the request before its body was complete'));
      return;
    }
    const timedOut = (error as { code?: string }).code === 'ERR_REQUEST_TIMEOUT';
    this.#tell(
      null,
      timedOut ? new GatewayError('request_timeout', error.message) : new GatewayError('invalid_request', 'the request body could not be read', { detail: error.message }),
    );
  }
}

const kRead = Symbol('gatehouse.bodyRead');
type Reading = HttpRequest & { [kRead]?: BodyRead<unknown> | undefined };

// The listeners of a node:http request (one read at a time per request: its state on it).
function onData(this: Reading, chunk: Buffer): void {
  if (this[kRead]!.chunk(chunk)) return;
  finish(this);
  this.pause();
}

function onEnd(this: Reading): void {
  const read = this[kRead]!;
  finish(this);
  read.end();
}

function onError(this: Reading, err: Error): void {
  const read = this[kRead]!;
  finish(this);
  read.failed(err);
}

function onClose(this: Reading): void {
  const read = this[kRead];
  if (read === undefined) return;
  finish(this);
  read.failed(undefined);
}

function finish(req: Reading): void {
  req.removeListener('data', onData);
  req.removeListener('end', onEnd);
  req.removeListener('error', onError);
  req.removeListener('close', onClose);
  req[kRead] = undefined;
}

const EMPTY = Buffer.alloc(0);

/** Checks `Content-Length` against the cap: the error to answer with, or null. */
export function declaredLengthProblem(contentLength: string | undefined, limit: number): GatewayError | null {
  if (contentLength === undefined) return null;
  const length = Number(contentLength);
  if (!Number.isSafeInteger(length) || length < 0) return new GatewayError('invalid_request', 'Content-Length is not a valid length');
  return length > limit ? tooLarge(limit) : null;
}

/** Reads the body and hands it to `sink.body(state, ...)`, or the failure to `sink.bodyFailed`. */
function readBodyInto<S>(req: HttpRequest, limit: number, sink: BodySink<S>, state: S): void {
  const declared = req.headers['content-length'];
  const problem = declaredLengthProblem(Array.isArray(declared) ? declared[0] : declared, limit);
  if (problem !== null) {
    sink.bodyFailed(state, problem);
    return;
  }
  startReading(req, limit, sink, state);
}

/** As readBodyInto, when the caller already checked Content-Length (the MCP endpoint does, from its header pass). */
export function startReading<S>(req: HttpRequest, limit: number, sink: BodySink<S>, state: S): void {
  const r = req as Reading;
  const read = new BodyRead(limit, sink, state) as BodyRead<unknown>;
  if (r.readInto !== undefined) {
    r.readInto(read);
    return;
  }
  r[kRead] = read;
  r.on('data', onData);
  r.on('end', onEnd);
  r.on('error', onError);
  r.on('close', onClose);
}

type Settle = { resolve(body: Buffer): void; reject(err: unknown): void };

const PROMISE_SINK: BodySink<Settle> = {
  body: (settle, body) => settle.resolve(body),
  bodyFailed: (settle, error) => settle.reject(error),
};

/**
 * Drops, as it arrives, the body of a request whose handler does not read one (a GET or DELETE
 * that carries a body). Left unread, it would stop the connection being read past a small
 * buffer: the requests after it would wait, and a client that went away would go unnoticed for
 * as long as the answer lasts (a GET stream: for good, holding its stream to the backend). A
 * body past `limit` bytes ends the connection, as an oversize POST body does.
 */
export function discardBody(req: HttpRequest, limit: number): void {
  let size = 0;
  const drop = (chunk: Buffer): void => {
    size += chunk.length;
    if (size <= limit) return;
    req.removeListener('data', drop);
    req.socket.destroy();
  };
  req.on('data', drop);
  // The client leaving mid-body is no one's error here.
  req.on('error', ignore);
}

function ignore(): void {}

/** Promise form, for plugin routes. */
export function readBody(req: HttpRequest, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => readBodyInto(req, limit, PROMISE_SINK, { resolve, reject }));
}
