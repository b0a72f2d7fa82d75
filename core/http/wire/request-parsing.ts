/**
 * How a client connection's bytes become requests: the parser's callbacks, and the two ways a
 * read reaches the parser (the parser reading the socket's handle, then `onExecute` after each
 * read; or a 'data' event, `onData`). The connection they work on is client-connection.ts's.
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { kOnBody, kOnHeaders, kOnHeadersComplete, kOnMessageBegin, kOnMessageComplete, METHODS, type NativeParser } from '../parser.ts';
import type { WireRequest } from './request.ts';

export const kConnection = Symbol('gatehouse.wire.connection');

/** What the callbacks read and call of their connection. */
export interface ParsingConnection {
  readonly parser: NativeParser;
  readonly queue: { readonly length: number };
  readonly maxPipelined: number;
  readonly idle: boolean;
  request: WireRequest | null;
  lastRequest: boolean;
  lastRequestDone: boolean;
  headersStartedAt: number;
  requestStartedAt: number;
  partialHeaders: string[] | null;
  partialUrl: string;
  lastActive: number;
  methodSeen: string | null;
  atMessageStart: boolean;
  messagesBegun: number;
  begin(method: string, url: string, headers: string[], major: number, minor: number, upgrade: boolean, keepAlive: boolean): void;
  malformed(error: Error): void;
  pauseForPipeline(): void;
  takeHandle(): void;
  failed(): void;
  destroy(): void;
}

type Tagged<T> = T & { [kConnection]: ParsingConnection };

/** Makes `parser` read requests for `connection`. */
export function readsRequests(parser: NativeParser, connection: ParsingConnection): void {
  (parser as Tagged<NativeParser>)[kConnection] = connection;
  parser[kOnMessageBegin] = onMessageBegin;
  parser[kOnHeaders] = onHeaders;
  parser[kOnHeadersComplete] = onHeadersComplete;
  parser[kOnBody] = onBody;
  parser[kOnMessageComplete] = onMessageComplete;
}

function onMessageBegin(this: Tagged<NativeParser>): void {
  const connection = this[kConnection];
  // After the connection's last request, what llhttp still frames in the same read is dropped.
  if (connection.lastRequestDone) return;
  connection.messagesBegun++;
  connection.headersStartedAt = connection.requestStartedAt = performance.now();
}

function onHeaders(this: Tagged<NativeParser>, headers: string[], url: string): void {
  const connection = this[kConnection];
  if (connection.lastRequestDone) return;
  (connection.partialHeaders ??= []).push(...headers);
  connection.partialUrl += url;
}

function onHeadersComplete(
  this: Tagged<NativeParser>,
  major: number,
  minor: number,
  headers: string[] | undefined,
  method: number,
  url: string | undefined,
  _status: number,
  _message: string,
  upgrade: boolean,
  keepAlive: boolean,
): number {
  const connection = this[kConnection];
  if (connection.lastRequestDone) return 0;
  let all = headers ?? [];
  let target = url ?? '';
  if (connection.partialHeaders !== null) {
    all = connection.partialHeaders.concat(all);
    target = connection.partialUrl + target;
    connection.partialHeaders = null;
    connection.partialUrl = '';
  }
  connection.headersStartedAt = 0;
  try {
    connection.begin(METHODS[method] ?? 'GET', target, all, major, minor, upgrade, keepAlive);
  } catch {
    connection.failed();
  }
  return 0;
}

function onBody(this: Tagged<NativeParser>, chunk: Buffer): void {
  const connection = this[kConnection];
  try {
    connection.request?.push(chunk);
  } catch {
    connection.failed();
  }
}

function onMessageComplete(this: Tagged<NativeParser>): void {
  const connection = this[kConnection];
  const request = connection.request;
  connection.request = null;
  if (connection.lastRequest) connection.lastRequestDone = true;
  try {
    request?.finish();
  } catch {
    connection.failed();
  }
}

/**
 * After the parser took a read of the socket, when it reads the handle itself (../handle-reading.ts):
 * what onData does after `execute`. No callback of the parser may throw then: each catches what
 * its work throws and ends the connection.
 */
export function onExecute(this: Tagged<NativeParser>, result: number | Error): void {
  const connection = this[kConnection];
  if (connection.lastRequestDone) return;
  connection.lastActive = performance.now();
  try {
    const failed = typeof result !== 'number';
    // The method of a message refused before its head is complete, or whose head is still
    // arriving, when this read began with it (a copy of the read, made only then).
    if (failed || connection.headersStartedAt !== 0) {
      const begun = connection.messagesBegun;
      if (begun === 1 && connection.atMessageStart) connection.methodSeen = sniffHead(this.getCurrentBuffer());
      else if (begun !== 0) connection.methodSeen = null;
    }
    connection.messagesBegun = 0;
    connection.atMessageStart = connection.request === null && connection.headersStartedAt === 0;
    if (failed) connection.malformed(result);
    else if (pipelinedTooFar(connection)) connection.pauseForPipeline();
  } catch {
    connection.failed();
  }
}

/**
 * A client that pipelines without reading answers gets no more handler calls for a while: once
 * `maxPipelined` requests are unanswered, and none is still arriving (reading stopped under a
 * body would keep it from ever completing: at a limit of 1, any body longer than a read).
 */
function pipelinedTooFar(connection: ParsingConnection): boolean {
  return connection.queue.length >= connection.maxPipelined && connection.request === null;
}

/** 'HEAD' when `bytes` begin with that method (the answer to a refused HEAD request has no body). */
function sniffHead(bytes: Buffer): string | null {
  return bytes.length >= 5 && bytes[0] === 0x48 && bytes.toString('latin1', 0, 5) === 'HEAD ' ? 'HEAD' : null;
}

export function onData(this: Tagged<Socket>, chunk: Buffer): void {
  const connection = this[kConnection];
  // After a request that asked to switch protocols, llhttp no longer frames what follows as
  // HTTP: none of it is read as a request (it would be a smuggled one).
  if (connection.lastRequestDone) return;
  connection.lastActive = performance.now();
  // A chunk that starts a message when nothing is in progress starts with its method: kept for a
  // refusal of that message before its head is complete (a HEAD request's has no body).
  if (connection.idle) connection.methodSeen = sniffHead(chunk);
  let result: number | Error;
  try {
    result = connection.parser.execute(chunk);
  } catch {
    // A callback threw past every handler's own guard: this connection ends, the process does not.
    connection.destroy();
    return;
  }
  if (connection.lastRequestDone) return;
  if (typeof result !== 'number') connection.malformed(result);
  else if (pipelinedTooFar(connection)) connection.pauseForPipeline();
  // What the stream held while reading was paused is parsed: the parser may read the handle again.
  else connection.takeHandle();
}
