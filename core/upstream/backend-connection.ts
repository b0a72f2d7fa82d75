/**
 * One keep-alive HTTP/1.1 connection to a backend: a socket, Node's native response parser, and
 * at most one exchange at a time (no pipelining). The request is written with one syscall; the
 * response reaches the exchange through the parser's callbacks, which are module functions that
 * find the connection on the parser (no closures per request).
 */
import { connect as netConnect, isIP, type Socket } from 'node:net';
import type { LookupFunction } from '../http/address-guard.ts';
import { connect as tlsConnect } from 'node:tls';
import { Buffer } from 'node:buffer';
import {
  createResponseParser,
  kOnBody,
  kOnHeaders,
  kOnHeadersComplete,
  kOnMessageComplete,
  type NativeParser,
} from '../http/parser.ts';
import { HandleReading } from '../http/handle-reading.ts';
import { NOT_WRITTEN, writeToHandle } from '../http/handle-writing.ts';
import { isHeaderNamed } from '../base/header-list.ts';
import type { RequestHeads } from './request-heads.ts';
import { UpstreamError } from './upstream-error.ts';
import type { Carrier, UpstreamHandler } from './transport.ts';

export { UpstreamError } from './upstream-error.ts';

/**
 * What the addresses a pool dials are checked against (endpoint-guard.ts: a registry-fed
 * backend's); the pools of the operator's own backends have none.
 */
export interface DialGuard {
  /** The sockets' `lookup`: resolves the host name and keeps the allowed addresses only. */
  readonly lookup: LookupFunction;
  /** The refusal of a connect to `address` (an IP-literal host, or where a socket connected), or null. */
  check(address: string, host: string): UpstreamError | null;
}

/** What the pool exposes to its connections. */
export interface ConnectionOwner {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** `Host` header value: the backend's own authority. */
  readonly authority: string;
  readonly connectTimeoutMs: number;
  /** The guard of the addresses dialled, or null (no check, no cost). */
  readonly guard: DialGuard | null;
  /** How the host name is resolved: the guard's lookup, one given in code, or undefined (dns.lookup). */
  readonly lookup: LookupFunction | undefined;
  /** What writes its connections' request heads. */
  readonly heads: RequestHeads;
  release(connection: Connection): void;
  discard(connection: Connection): void;
}

const kConnection = Symbol('gatehouse.connection');
type Tagged<T> = T & { [kConnection]: Connection };

function onSocketConnect(this: Tagged<Socket>): void {
  this.setTimeout(0);
  const connection = this[kConnection];
  connection.connected = true;
  // The parser reads the handle connected (happy eyeballs may have tried others); TLS reads its own.
  if (!connection.owner.tls && !connection.closed) connection.readThroughParser();
}

/** A guarded pool's socket connected: where it connected is judged before anything is written (the request waits for 'connect'). */
function onGuardedSocketConnect(this: Tagged<Socket>): void {
  const connection = this[kConnection];
  const address = this.remoteAddress;
  if (address === undefined) return;
  const refusal = connection.owner.guard!.check(address, connection.owner.host);
  if (refusal !== null) connection.fail(refusal);
}

function onSocketTimeout(this: Tagged<Socket>): void {
  const connection = this[kConnection];
  if (!connection.connected) connection.fail(new UpstreamError('ECONNECT_TIMEOUT', 'connect timeout'));
}

function onSocketData(this: Tagged<Socket>, chunk: Buffer): void {
  const connection = this[kConnection];
  if (connection.handler === null) {
    connection.fail(new UpstreamError('EPROTO', 'the backend sent data with no request outstanding'));
    return;
  }
  let result: number | Error;
  try {
    result = connection.parser.execute(chunk);
  } catch (err) {
    failedCallback(connection, err);
    return;
  }
  parsed(connection, result);
  connection.takeHandle(); // what the stream held while reading was paused is parsed
}

/** onSocketData's work after a read, when the parser reads the handle (a read with no request outstanding is refused after it). */
function onExecute(this: Tagged<NativeParser>, result: number | Error): void {
  const connection = this[kConnection];
  if (connection.closed) return;
  if (connection.handler === null && connection.completed === null) connection.fail(new UpstreamError('EPROTO', 'the backend sent data with no request outstanding'));
  else parsed(connection, result);
}

function parsed(connection: Connection, result: number | Error): void {
  if (typeof result === 'number') return connection.afterRead();
  const code = (result as { code?: string }).code ?? 'HPE_ERROR';
  connection.fail(new UpstreamError(code, `invalid HTTP response (${code})`, result));
}

/** A callback threw (an answer nobody asked for, a writer toward the client that refused): the connection ends, the process does not. */
function failedCallback(connection: Connection, err: unknown): void {
  connection.fail(err instanceof UpstreamError ? err : new UpstreamError('EPROTO', `the backend's response could not be handled: ${(err as Error)?.message ?? err}`, err));
}

function onSocketError(this: Tagged<Socket>, err: Error): void {
  const connection = this[kConnection];
  // A lookup's refusal (the guard's) arrives as it was made.
  if (err instanceof UpstreamError) return connection.fail(err);
  const code = (err as { code?: string }).code ?? 'ECONNRESET';
  connection.fail(new UpstreamError(code, err.message, err));
}

function onSocketClose(this: Tagged<Socket>): void {
  const connection = this[kConnection];
  if (connection.handler !== null) {
    // A body delimited by the connection closing ends here; anything else was cut short.
    let result: unknown;
    try {
      result = connection.parser.finish();
    } catch (err) {
      result = err;
    }
    if (connection.handler !== null) {
      connection.fail(new UpstreamError('ECONNRESET', 'the backend closed the connection before its response was complete', result));
      return;
    }
  }
  connection.fail(null);
}

function onHeaders(this: Tagged<NativeParser>, headers: string[]): void {
  // More than 32 header lines arrive in several parts before onHeadersComplete.
  const connection = this[kConnection];
  (connection.partialHeaders ??= []).push(...headers);
}

/** The bytes of a read went on past the response: a second answer nobody asked for. */
function unsolicited(): UpstreamError {
  return new UpstreamError('EPROTO', 'the backend sent more than one response to one request');
}

function onHeadersComplete(
  this: Tagged<NativeParser>,
  _major: number,
  _minor: number,
  headers: string[] | undefined,
  _method: unknown,
  _url: unknown,
  status: number,
  _statusMessage: string,
  _upgrade: boolean,
  keepAlive: boolean,
): number {
  const connection = this[kConnection];
  try {
    return headersComplete(connection, headers, status, keepAlive);
  } catch (err) {
    failedCallback(connection, err); // called from C++ when the parser reads the handle
    return -1; // llhttp stops parsing the read
  }
}

function headersComplete(connection: Connection, headers: string[] | undefined, status: number, keepAlive: boolean): number {
  if (connection.handler === null) throw unsolicited();
  let all = headers ?? [];
  if (connection.partialHeaders !== null) {
    all = connection.partialHeaders.concat(all);
    connection.partialHeaders = null;
  }
  // The gateway never asks a backend to switch protocols: a 101 would make whatever follows on
  // the connection unframed bytes, in both directions.
  if (status === 101) throw new UpstreamError('EPROTO', 'the backend switched protocols (101) unasked');
  if (status < 200) {
    // 1xx informational (103 Early Hints...): the real response follows.
    connection.informational = true;
    return 0;
  }
  connection.keepAlive = keepAlive;
  // The backend's idle limit does not change between responses: read it from the first one.
  if (connection.served === 0) connection.keepAliveHintMs = keepAliveHint(all);
  connection.deadline = 0;
  if (!connection.handler.onHeaders(status, all)) connection.pause();
  return connection.headOnly ? 1 : 0;
}

function onBody(this: Tagged<NativeParser>, chunk: Buffer): void {
  const connection = this[kConnection];
  try {
    if (connection.handler === null) throw unsolicited();
    if (!connection.handler.onData(chunk)) connection.pause();
  } catch (err) {
    failedCallback(connection, err);
  }
}

function onMessageComplete(this: Tagged<NativeParser>): void {
  const connection = this[kConnection];
  if (connection.informational) {
    connection.informational = false;
    return;
  }
  const handler = connection.handler;
  if (handler === null) {
    failedCallback(connection, unsolicited());
    return;
  }
  connection.handler = null;
  connection.answerDeadline = 0;
  connection.served++;
  // Released only once the whole read is parsed (afterRead): bytes that follow the response in
  // the same read must fail this connection, not become the answer to the next request.
  connection.completed = handler;
}

/** `Keep-Alive: timeout=N` of a response: how long the backend keeps an idle connection, ms. */
function keepAliveHint(headers: string[]): number {
  for (let i = 0; i < headers.length; i += 2) {
    if (isHeaderNamed(headers[i]!, 'keep-alive')) {
      const match = /timeout=(\d+)/i.exec(headers[i + 1]!);
      if (match !== null) return Number(match[1]) * 1000;
    }
  }
  return Infinity;
}

export class Connection implements Carrier {
  readonly owner: ConnectionOwner;
  readonly socket: Tagged<Socket>;
  readonly parser: Tagged<NativeParser>;
  handler: UpstreamHandler | null = null;
  connected = false;
  closed = false;
  keepAlive = true;
  /** The backend's own idle limit (Keep-Alive hint), ms; the pool expires idle connections before it. */
  keepAliveHintMs = Infinity;
  informational = false;
  headOnly = false;
  partialHeaders: string[] | null = null;
  /** The exchange whose response the current read completed, told once the read is parsed. */
  completed: UpstreamHandler | null = null;
  /** performance.now() by which response headers must arrive; 0 when not waiting. */
  deadline = 0;
  /** performance.now() by which the whole response must have arrived; 0 when the exchange has no such deadline. */
  answerDeadline = 0;
  idleSince = 0;
  served = 0;
  paused = false;
  /** Who reads the socket's handle once connected (handle-reading.ts); null: its stream ('data' events). */
  #reading: HandleReading | null = null;

  constructor(owner: ConnectionOwner) {
    this.owner = owner;
    const options = owner.lookup === undefined ? { host: owner.host, port: owner.port } : { host: owner.host, port: owner.port, lookup: owner.lookup };
    const socket = (
      owner.tls
        ? tlsConnect({ ...options, servername: isIP(owner.host) === 0 ? owner.host : undefined, ALPNProtocols: ['http/1.1'] })
        : netConnect(options)
    ) as Tagged<Socket>;
    socket[kConnection] = this;
    socket.setNoDelay(true);
    socket.setTimeout(owner.connectTimeoutMs);
    // Before the request's own 'connect' listener (send writes once connected): nothing goes to a refused address.
    if (owner.guard !== null) socket.once('connect', onGuardedSocketConnect);
    socket.on(owner.tls ? 'secureConnect' : 'connect', onSocketConnect);
    socket.on('timeout', onSocketTimeout);
    socket.on('data', onSocketData);
    socket.on('error', onSocketError);
    socket.on('close', onSocketClose);
    this.socket = socket;
    const parser = createResponseParser() as Tagged<NativeParser>;
    parser[kConnection] = this;
    parser[kOnHeaders] = onHeaders;
    parser[kOnHeadersComplete] = onHeadersComplete;
    parser[kOnBody] = onBody;
    parser[kOnMessageComplete] = onMessageComplete;
    this.parser = parser;
  }

  /** A read was parsed to its end: the exchange it completed is told, and the connection reused. */
  afterRead(): void {
    const handler = this.completed;
    if (handler === null) return;
    this.completed = null;
    if (this.keepAlive) {
      // A pause was the finished exchange's backpressure: the next exchange reads from the start.
      this.resume();
      this.owner.release(this);
    } else {
      this.destroy();
    }
    handler.onComplete();
  }

  /** Writes one request: its head as request-heads.ts makes it; a value it refuses fails the exchange and nothing is written. */
  send(handler: UpstreamHandler, method: string, path: string, headers: readonly string[], body: Buffer | null, deadline: number, answerDeadline = 0): void {
    this.handler = handler;
    handler.attach(this);
    this.headOnly = method === 'HEAD';
    this.deadline = deadline;
    this.answerDeadline = answerDeadline;
    const heads = this.owner.heads;
    const head = heads.text(method, path, headers, body === null ? -1 : body.length);
    if (head === null) {
      this.fail(new UpstreamError('EUNSAFE_HEADER', `refused to send header ${JSON.stringify(heads.refusedName.slice(0, 64))}: its value has characters that are not allowed`));
      return;
    }
    let request: string | Buffer = head; // latin1: a byte a character
    if (body !== null && body.length > 0) {
      request = Buffer.allocUnsafe(head.length + body.length);
      request.write(head, 0, head.length, 'latin1');
      body.copy(request, head.length);
    }
    // Straight to the handle when the parser reads it (plain TCP, connected); a queued rest needs no telling.
    if (this.#reading === null || writeToHandle(this.socket, request, null, 0) === NOT_WRITTEN) this.socket.write(request, 'latin1');
  }

  /** While paused, the socket's stream reads (handle-reading.ts): it still sees the backend leave. */
  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
    this.#reading?.toStream();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
    this.takeHandle();
  }

  /** From the connect on: the parser reads the socket's handle, unless reading is paused. */
  readThroughParser(): void {
    this.#reading = HandleReading.start(this.socket, this.parser, onExecute);
    if (this.paused) this.#reading?.toStream();
  }

  /** The parser reads the handle again, once reading is not paused and the stream holds nothing more. */
  takeHandle(): void {
    if (!this.paused && !this.closed) this.#reading?.toParser();
  }

  /** Ends the exchange with `error` (null: the connection closed while idle), and the connection with it. */
  fail(error: UpstreamError | null): void {
    const handler = this.handler;
    const completed = this.completed;
    this.handler = null;
    this.completed = null;
    this.destroy();
    // A response that was complete before the failure (what followed it was the problem) stands.
    completed?.onComplete();
    if (handler !== null) handler.onError(error ?? new UpstreamError('ECONNRESET', 'connection closed'));
  }

  /** Abandons the exchange in flight (the client went away): the connection cannot be reused. */
  abort(): void {
    this.handler = null;
    this.destroy();
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.deadline = 0;
    this.answerDeadline = 0;
    this.socket.destroy();
    const parser = this.parser;
    // No longer the handle's reader before the parser is freed (the handle closes later than that).
    this.#reading?.toStream();
    // Free the native parser once its callbacks have unwound (as node:http does).
    setImmediate(() => parser.close());
    this.owner.discard(this);
  }
}
