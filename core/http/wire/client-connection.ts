/**
 * One client connection of Gatehouse's own HTTP/1.1 server: Node's native request parser
 * (llhttp, strict: conflicting Content-Length / Transfer-Encoding and other smuggling shapes are
 * refused) fed from the socket, a request object per message, and the responses in order —
 * a pipelined request's response waits, buffered, until the ones before it are finished.
 */
import { Buffer } from 'node:buffer';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { createRequestParser, type NativeParser } from '../parser.ts';
import { hasHeader, isHeaderNamed } from '../../base/header-list.ts';
import { HandleReading } from '../handle-reading.ts';
import { NOT_WRITTEN, QUEUED, WRITTEN, queuedBytes, writeToHandle } from '../handle-writing.ts';
import { kConnection, onData, onExecute, readsRequests, type ParsingConnection } from './request-parsing.ts';
import { WireRequest, type BodySource } from './request.ts';
import { WireResponse, type ResponseSink } from './response.ts';
import { HeldResponses } from './held-responses.ts';
import { SendProgress } from './send-progress.ts';

/** What a connection needs from its server. */
export interface ConnectionOwner {
  readonly handler: (req: WireRequest, res: WireResponse) => void;
  readonly keepAliveSeconds: number;
  readonly maxHeaderSize: number;
  readonly maxPipelinedRequests: number;
  readonly maxStreamBuffer: number;
  /** No new keep-alive (graceful shutdown). */
  readonly closing: boolean;
  forget(connection: Connection): void;
  /** The connection was cut because its client stopped reading. */
  dropped(reason: 'stream_buffer'): void;
}

type Tagged<T> = T & { [kConnection]: Connection };

/** The error code of a refusal the connection writes itself, by status (else `invalid_request`). */
const REFUSAL_CODE: Readonly<Record<number, string>> = { 500: 'internal_error', 501: 'not_implemented' };
const PAUSED_BY_BODY = 1;
const PAUSED_BY_PIPELINE = 2;

function onEnd(this: Tagged<Socket>): void {
  // The client half-closed. As node:http does by default, that ends the exchange: a request
  // still arriving is aborted and the connection closes, so a response nobody will read (an SSE
  // stream, say) is torn down rather than held open.
  const connection = this[kConnection];
  connection.request?.destroyRequest(new Error('the client closed the connection'));
  connection.request = null;
  this.end();
}

function onDrain(this: Tagged<Socket>): void {
  this[kConnection].drained(false, false);
}

function onPause(this: Tagged<Socket>): void {
  this[kConnection].paused();
}

function onClose(this: Tagged<Socket>): void {
  this[kConnection].closed();
}

/** A write handed to the handle directly (handle-writing.ts) is out: `last` when it ended a response. */
function onHandleWriteDone(socket: Socket, last: number, error: Error | null): void {
  if (error === null) (socket as Tagged<Socket>)[kConnection].drained(last === 1, true);
}

function onError(): void {
  // Resets and timeouts end in 'close', where the requests and responses are told.
}

export class Connection implements ResponseSink, BodySource, ParsingConnection {
  readonly socket: Tagged<Socket>;
  readonly parser: Tagged<NativeParser>;
  readonly #owner: ConnectionOwner;
  /** The request whose body is being parsed. */
  request: WireRequest | null = null;
  /** Responses in request order; only the first writes to the socket. */
  readonly queue: WireResponse[] = [];
  /** What pipelined responses wrote while one before them was being written. */
  readonly #held = new HeldResponses<WireResponse>();
  /** Responses whose last write is in flight, in order (socket writes complete in order). */
  readonly #finishing: WireResponse[] = [];
  /** One callback per connection for every last write (no closure per response). */
  readonly #afterLastWrite = (): void => {
    const response = this.#finishing.shift();
    if (response !== undefined) this.#completed(response);
  };
  partialHeaders: string[] | null = null;
  partialUrl = '';
  /** performance.now() when the current request's head began (0: none pending). */
  headersStartedAt = 0;
  /** performance.now() when the request being received (`request`) began. */
  requestStartedAt = 0;
  /**
   * The request being read is the connection's last (it asked to switch protocols, which the
   * gateway ignores, RFC 9110 §7.8: it is served as HTTP/1.1 and its response closes the
   * connection); once it is complete, nothing more is parsed.
   */
  lastRequest = false;
  lastRequestDone = false;
  lastActive: number;
  /** Whether the client takes what is written (the server's send timeout reads it). */
  readonly progress: SendProgress;
  /** 'HEAD' when the message being read began with that method, as far as its first chunk tells (else null). */
  methodSeen: string | null = null;
  /** Unanswered requests at which reading pauses until one is answered (`maxPipelinedRequests`). */
  readonly maxPipelined: number;
  /** Why reading is paused (PAUSED_BY_* bits); the socket reads again when none is left. */
  #paused = 0;
  #gone = false;
  /** Who reads the socket's handle (core/http/handle-reading.ts); null: its stream, always ('data' events). */
  readonly #reading: HandleReading | null;
  /** The next read starts a message: `methodSeen` may be read off it (when the parser reads the handle). */
  atMessageStart = true;
  /** Messages begun in the read being parsed (when the parser reads the handle). */
  messagesBegun = 0;

  constructor(socket: Socket, owner: ConnectionOwner) {
    this.#owner = owner;
    this.maxPipelined = owner.maxPipelinedRequests;
    this.socket = socket as Tagged<Socket>;
    this.socket[kConnection] = this;
    this.progress = new SendProgress(socket);
    socket.setNoDelay(true);
    const parser = createRequestParser(owner.maxHeaderSize) as Tagged<NativeParser>;
    readsRequests(parser, this);
    this.parser = parser;
    this.lastActive = performance.now();
    this.#reading = HandleReading.start(socket, parser, onExecute);
    if (this.#reading !== null) socket.on('pause', onPause);
    // Also when the parser reads the handle: the socket flows, so that its end is told ('end').
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
    socket.on('error', onError);
  }

  get keepAliveSeconds(): number {
    return this.#owner.keepAliveSeconds;
  }

  /** Idle: no request in progress (graceful shutdown closes these at once). */
  get idle(): boolean {
    return this.queue.length === 0 && this.request === null && this.headersStartedAt === 0;
  }

  begin(method: string, url: string, headers: string[], major: number, minor: number, upgrade: boolean, keepAlive: boolean): void {
    const http10 = major === 1 && minor === 0;
    const request = new WireRequest(method, url, headers, major === 1 && minor === 1 ? '1.1' : `${major}.${minor}`, this.socket, this);
    const response = new WireResponse(this, method, http10, keepAlive && !this.#owner.closing);
    response.request = request;
    this.request = request;
    this.queue.push(response);
    if (method === 'CONNECT') {
      // A tunnel request: llhttp frames nothing after its head, so its bytes could not be told
      // from the next request's. Refused, and the connection reads nothing more.
      this.lastRequest = this.lastRequestDone = true;
      this.#refuse(response, 501, 'CONNECT is not supported');
      return;
    }
    // Upgrade without `Connection: upgrade` is framed by llhttp as a plain request; it is the
    // connection's last all the same (gateway-server.ts answers it with `connection: close`), so
    // nothing after it is read and piled up behind an answer that may stream for long.
    if (upgrade || hasHeader(headers, 'upgrade')) {
      this.lastRequest = true;
      response.keepAlive = false;
    }
    if (major === 1 && minor === 1 && !hasHeader(headers, 'host')) {
      this.#refuse(response, 400, 'an HTTP/1.1 request needs a Host header');
      return;
    }
    // Only when nothing before it is being written (a pipelining client waits out its own timer).
    if (this.queue[0] === response && expectsContinue(headers)) this.socket.write('HTTP/1.1 100 Continue\r\n\r\n');
    try {
      this.#owner.handler(request, response);
    } catch {
      if (!response.headersSent) this.#refuse(response, 500, 'internal error');
      else this.destroy();
    }
  }

  #refuse(response: WireResponse, status: number, description: string): void {
    const body = JSON.stringify({ error: REFUSAL_CODE[status] ?? 'invalid_request', error_description: description });
    response.writeHead(status, ['content-type', 'application/json', 'connection', 'close']);
    response.end(body);
  }

  /**
   * The request being received did not arrive whole within the request timeout (a stalled body):
   * whoever reads its body is told (the MCP endpoint answers 408), and a request still
   * unanswered gets the 408 here. The connection closes after it: its remaining bytes are lost.
   */
  requestTimedOut(limitMs: number): void {
    const request = this.request;
    if (request === null) return;
    this.request = null;
    const answering = this.queue.find((r) => r.request === request);
    if (answering !== undefined && answering.headersSent) {
      // Its answer is under way (a stream): the rest of the body is dropped and nothing more is
      // read as a request, but the socket keeps being read, so that the client leaving is seen.
      this.lastRequest = this.lastRequestDone = true;
      answering.keepAlive = false;
      request.destroyRequest(Object.assign(new Error(`the request was not received within ${Math.round(limitMs / 1000)} s`), { code: 'ERR_REQUEST_TIMEOUT' }));
      return;
    }
    this.#pause(PAUSED_BY_BODY);
    const description = `the request was not received within ${Math.round(limitMs / 1000)} s`;
    request.destroyRequest(Object.assign(new Error(description), { code: 'ERR_REQUEST_TIMEOUT' }));
    const response = this.queue.find((r) => r.request === request);
    if (response === undefined || response.headersSent || response.writableEnded) return;
    response.keepAlive = false;
    const body = JSON.stringify({ error: 'request_timeout', error_description: description });
    response.writeHead(408, ['content-type', 'application/json', 'connection', 'close']);
    response.end(body);
  }

  /** The parser refused the bytes: a clear 400 (431 for an oversize head), then close. */
  malformed(error: Error): void {
    const code = (error as { code?: string }).code ?? 'HPE_ERROR';
    const status = code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'HPE_HEADERS_TIMEOUT' ? 408 : 400;
    const description =
      status === 431 ? 'request header fields too large' : status === 408 ? 'the request head did not arrive in time' : `malformed HTTP request (${code})`;
    this.request?.destroyRequest(new Error(description));
    this.request = null;
    const only = this.queue.length === 1 ? this.queue[0]! : null;
    if (only !== null && !only.headersSent) {
      // The bad bytes were in the body of a request not yet answered: answer it with the 400.
      this.queue.length = 0;
      this.#held.drop(only);
      only.abort();
    } else if (this.queue.length > 0) {
      this.destroy();
      return;
    }
    const body = JSON.stringify({ error: 'invalid_request', error_description: description });
    const reason = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
    // The answer to a HEAD request has no body (RFC 9110 §9.3.2), only the length it would have.
    const head = only !== null ? only.forHead : this.methodSeen === 'HEAD';
    this.socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${head ? '' : body}`);
  }

  // ---- ResponseSink ----

  send(response: WireResponse, data: string | Buffer, last: boolean): boolean {
    if (this.#gone || this.socket.writableEnded || this.socket.destroyed) return false;
    if (this.queue[0] !== response) {
      // A pipelined response waits for the ones before it, within bounds.
      const verdict = this.#held.hold(response, data, last);
      if (verdict === null) this.destroy();
      return verdict === true;
    }
    this.lastActive = performance.now();
    if (!last) {
      if (data.length === 0) return true;
      // A writer that does not wait for 'drain' (events the gateway sends itself) would make the
      // socket buffer grow for as long as the client does not read: past the limit, it is dropped.
      if (this.progress.buffered > this.#owner.maxStreamBuffer) {
        this.destroy();
        this.#owner.dropped('stream_buffer');
        return false;
      }
      return this.#write(data, false);
    }
    this.#finishing.push(response);
    this.#write(data, true);
    return true;
  }

  /** Writes to the handle when it may (handle-writing.ts), else through the stream; false: blocked until 'drain'. */
  #write(data: string | Buffer, last: boolean): boolean {
    if (this.#reading !== null) {
      const wrote = writeToHandle(this.socket, data, onHandleWriteDone, last ? 1 : 0);
      if (wrote === WRITTEN) {
        // A last write the kernel took at once is told on the next tick, as the stream tells it.
        if (last) process.nextTick(this.#afterLastWrite);
        return true;
      }
      if (wrote === QUEUED) {
        this.progress.directQueued = queuedBytes(this.socket); // libuv held nothing before it
        this.progress.blocked(this.lastActive);
      }
      if (wrote !== NOT_WRITTEN) return false; // FAILED: the socket's 'close' tells the rest
    }
    const after = last ? this.#afterLastWrite : undefined;
    // A string is a response head (bodies are Buffers by now): header bytes are latin1, as node:http writes them.
    if (typeof data === 'string' ? this.socket.write(data, 'latin1', after) : this.socket.write(data, after)) return true;
    this.progress.blocked(this.lastActive);
    return false;
  }

  /**
   * The socket drained, or a queued write handed to the handle is out (`direct`; `last`: it
   * ended a response): no longer blocked, unless the stream still waits for its own 'drain'.
   */
  drained(last: boolean, direct: boolean): void {
    if (direct) this.progress.directQueued = 0;
    const needDrain = this.socket.writableNeedDrain;
    if (!needDrain) this.progress.blockedSince = 0;
    // After the clearing: the response this completes may write the next one, which may block anew.
    if (last) this.#afterLastWrite();
    else if (!needDrain) this.queue[0]?.emit('drain');
  }

  /** `response` is on the wire: the next one may write, or the connection closes. */
  #completed(response: WireResponse): void {
    if (this.queue[0] !== response) return;
    this.queue.shift();
    if (this.queue.length < this.maxPipelined) this.#resume(PAUSED_BY_PIPELINE);
    response.finished();
    response.request?.destroyRequest();
    if (!response.keepAlive) {
      // The connection ends with this response: what was pipelined behind it will never be
      // written, so it is aborted now (its handlers see 'close') and nothing more is read.
      this.#abandonQueued();
      this.socket.end();
      return;
    }
    const next = this.queue[0];
    const taken = next === undefined ? undefined : this.#held.take(next);
    if (taken !== undefined) {
      this.send(next!, taken.data, taken.held.last);
      if (taken.held.waiting && !taken.held.last) next!.emit('drain');
    }
    if (this.queue.length === 0 && this.#owner.closing) this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Aborts every response still queued (their requests too) and reads no more requests. */
  #abandonQueued(): void {
    this.lastRequest = this.lastRequestDone = true;
    // Out of the queue first: a handler told of its request's end may answer at once, and that
    // answer must not reach the socket after the one that closes it.
    const queued = this.queue.splice(0);
    for (const response of queued) response.abort();
    this.request?.destroyRequest(new Error('the connection is closing'));
    this.request = null;
    for (const response of queued) response.request?.destroyRequest(new Error('the connection is closing'));
    this.#held.clear();
    this.#resume(PAUSED_BY_BODY | PAUSED_BY_PIPELINE);
  }

  // ---- BodySource ----

  pauseReading(): void {
    this.#pause(PAUSED_BY_BODY);
  }

  resumeReading(): void {
    this.#resume(PAUSED_BY_BODY);
  }

  pauseForPipeline(): void {
    this.#pause(PAUSED_BY_PIPELINE);
  }

  #pause(reason: number): void {
    if (this.#paused === 0) this.socket.pause();
    this.#paused |= reason;
  }

  /** The socket was paused (here, or by the server after an Upgrade request): its stream reads (handle-reading.ts). */
  paused(): void {
    this.#reading?.toStream();
  }

  #resume(reason: number): void {
    if ((this.#paused & reason) === 0) return;
    this.#paused &= ~reason;
    if (this.#paused === 0) {
      this.socket.resume();
      this.takeHandle();
    }
  }

  /** The parser reads the handle again, once reading is not paused and the stream holds nothing more. */
  takeHandle(): void {
    if (this.#reading === null || this.#paused !== 0 || this.lastRequestDone || !this.#reading.toParser()) return;
    this.messagesBegun = 0;
    this.atMessageStart = this.request === null && this.headersStartedAt === 0;
  }

  /** Work a parser callback started threw past its own guards: this connection ends, the process does not. */
  failed(): void {
    this.lastRequest = this.lastRequestDone = true;
    this.request = null;
    this.destroy();
  }

  /** The socket is gone: every request and response in progress learns it. */
  closed(): void {
    if (this.#gone) return;
    this.#gone = true;
    this.request?.destroyRequest(new Error('the client closed the connection'));
    this.request = null;
    for (const response of this.queue) {
      response.request?.destroyRequest(new Error('the client closed the connection'));
      response.abort();
    }
    this.queue.length = 0;
    this.#held.clear();
    this.#finishing.length = 0;
    const parser = this.parser;
    this.#reading?.toStream(); // before the parser is freed
    setImmediate(() => parser.close());
    this.#owner.forget(this);
  }
}

/** Whether an Expect line of the request is `100-continue`. */
function expectsContinue(headers: string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) if (isHeaderNamed(headers[i]!, 'expect') && headers[i + 1]!.toLowerCase() === '100-continue') return true;
  return false;
}
