/**
 * The response side of Gatehouse's own HTTP/1.1 server: the parts of node:http's ServerResponse
 * the gateway uses. The status line and headers are serialised once, into the first write with
 * the first body chunk (one syscall for a JSON answer). Framing follows node:http: the caller's
 * Content-Length, else the length of a body given whole to `end()`, else chunked encoding
 * (HTTP/1.1) or connection close (HTTP/1.0); no body for HEAD, 204 and 304. `Date` and the
 * keep-alive headers are added. `finish` then `close` are emitted once the last bytes were
 * handed to the socket (never synchronously inside `end()`); `close` alone when the connection
 * died first.
 */
import { LazyEventEmitter } from './lazy-emitter.ts';
import { STATUS_CODES } from 'node:http';
import { Buffer } from 'node:buffer';
import process from 'node:process';

/** What a response needs from its connection. */
export interface ResponseSink {
  /** Writes for `response`, or keeps them while an earlier pipelined response is unfinished. */
  send(response: WireResponse, data: string | Buffer, last: boolean): boolean;
  /** Tears the connection down (a response that cannot be completed). */
  destroy(): void;
  readonly keepAliveSeconds: number;
}

import type { HttpHeaders } from '../types.ts';
import { isHeaderNamed } from '../../base/header-list.ts';
import { isWritableField, WritableFields } from '../writable-fields.ts';
import { HeadMemo } from '../head-memo.ts';

/** The header names and values last found writable in a response head, by position (writable-fields.ts). */
const RESPONSE_NAMES = new WritableFields(16);
const RESPONSE_VALUES = new WritableFields(16);
/** The response head written last (head-memo.ts). */
const RESPONSE_HEADS = new HeadMemo();

let cachedDateLine = '';
let cachedSecond = -1;

/** The `Date` header line, recomputed at most once a second. */
function httpDateLine(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedDateLine = 'date: ' + new Date(now).toUTCString() + '\r\n';
  }
  return cachedDateLine;
}

/** Status lines by code, made once each. */
const STATUS_LINES: string[] = [];

function statusLine(status: number): string {
  return (STATUS_LINES[status] ??= 'HTTP/1.1 ' + status + ' ' + (STATUS_CODES[status] ?? 'Unknown') + '\r\n');
}

let keptAliveSeconds = -1;
let keepAliveLines = '';

/** The keep-alive lines and the blank line that ends a head (one timeout per server, mostly). */
function keepAliveEnd(seconds: number): string {
  if (seconds !== keptAliveSeconds) {
    keptAliveSeconds = seconds;
    keepAliveLines = 'connection: keep-alive\r\nkeep-alive: timeout=' + seconds + '\r\n\r\n';
  }
  return keepAliveLines;
}

/** What the lines of a response head declared, kept with their text (head-memo.ts). */
const HAS_LENGTH = 1;
const HAS_DATE = 2;
const HAS_CONNECTION = 4;
const CLOSES = 8;

export class WireResponse extends LazyEventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  /** Whether the connection stays open after this response. */
  keepAlive: boolean;
  /** The request this answers; told `close` when the exchange is over. */
  request: { destroyRequest(error?: Error): void; discardBody?(): void } | null = null;
  readonly #sink: ResponseSink;
  readonly #noBodyRequest: boolean;
  readonly #http10: boolean;
  #headers: (string | number)[] = [];
  #extra: Map<string, [string, string]> | null = null;
  #chunked = false;
  /** What the head's lines declared (HAS_LENGTH, ...), once #listLines has run. */
  #declared = 0;

  /** The answer to a HEAD request: headers only. */
  get forHead(): boolean {
    return this.#noBodyRequest;
  }

  constructor(sink: ResponseSink, method: string, http10: boolean, keepAlive: boolean) {
    super();
    this.#sink = sink;
    this.#noBodyRequest = method === 'HEAD';
    this.#http10 = http10;
    this.keepAlive = keepAlive;
  }

  setHeader(name: string, value: string | number): this {
    if (this.headersSent) throw new Error('cannot set headers after they are sent');
    (this.#extra ??= new Map()).set(name.toLowerCase(), [name, String(value)]);
    return this;
  }

  writeHead(status: number, headers?: HttpHeaders): this {
    if (this.headersSent) throw new Error('writeHead after the headers were sent');
    this.statusCode = status;
    if (headers === undefined) return this;
    if (Array.isArray(headers)) {
      // A flat list (what the gateway writes); a value that is itself a list repeats the header.
      if (headers.every((h) => !Array.isArray(h))) this.#headers = headers as (string | number)[];
      else {
        const list: (string | number)[] = [];
        for (let i = 0; i < headers.length; i += 2) {
          const value = headers[i + 1];
          for (const v of Array.isArray(value) ? value : [value]) list.push(String(headers[i]), v ?? '');
        }
        this.#headers = list;
      }
    } else {
      const list: (string | number)[] = [];
      for (const [name, value] of Object.entries(headers)) {
        if (value === undefined) continue;
        if (Array.isArray(value)) for (const v of value) list.push(name, v);
        else list.push(name, value as string | number);
      }
      this.#headers = list;
    }
    return this;
  }

  /** The status line and headers; `bodyLength` is known when the whole body is at hand. */
  #head(bodyLength: number | null): string {
    const status = this.statusCode;
    const noBody = this.#noBodyRequest || status === 204 || status === 304 || status < 200;
    let head = this.#listLines(status);
    if (this.#extra !== null) head = this.#extraLines(head);
    const declared = this.#declared;
    const hasLength = (declared & HAS_LENGTH) !== 0;
    if ((declared & HAS_DATE) === 0) head += httpDateLine();
    if (this.#noBodyRequest && !hasLength && bodyLength !== null && bodyLength > 0 && status >= 200 && status !== 204 && status !== 304) {
      head += 'content-length: ' + bodyLength + '\r\n'; // HEAD: the length a GET would have had
    } else if (!noBody && !hasLength) {
      if (bodyLength !== null) head += 'content-length: ' + bodyLength + '\r\n';
      else if (this.#http10) this.keepAlive = false; // HTTP/1.0: the body ends with the connection
      else {
        this.#chunked = true;
        head += 'transfer-encoding: chunked\r\n';
      }
    }
    this.headersSent = true;
    if ((declared & HAS_CONNECTION) !== 0) return head + '\r\n';
    return head + (this.keepAlive ? keepAliveEnd(this.#sink.keepAliveSeconds) : 'connection: close\r\n\r\n');
  }

  /**
   * The status line and the lines of the header list, checked; what they declared is left in
   * `#declared`. A head without setHeader's headers starts from the lines it shares with the
   * last one written (head-memo.ts): they passed the checks when they were, and the flags kept
   * with them say what they declared.
   */
  #listLines(status: number): string {
    const headers = this.#headers;
    const extra = this.#extra;
    const memo = extra === null ? RESPONSE_HEADS : null;
    let line = 0;
    let differs = 0;
    let generation = 0;
    let flags = 0;
    let head = '';
    if (memo !== null) {
      line = memo.match(status, '', headers);
      differs = memo.differs;
      generation = memo.generation;
      head = memo.textAt(line);
      flags = memo.flagsAt(line);
      if ((flags & CLOSES) !== 0) this.keepAlive = false;
    }
    if (line === 0) {
      head = statusLine(status);
      line = 1;
    }
    for (let i = 2 * line - 2; ; i += 2, line++) {
      if (line === differs) head = memo!.keep(generation, line, head, flags);
      if (i >= headers.length) break;
      const name = String(headers[i]);
      const value = String(headers[i + 1]);
      if (line >= differs && (!RESPONSE_NAMES.check(name, i >> 1) || !RESPONSE_VALUES.check(value, i >> 1))) throw new TypeError(`invalid response header ${JSON.stringify(name)}: control characters and characters past latin1 are not allowed`);
      if (extra !== null && extra.has(name.toLowerCase())) continue;
      // The names the framing reads, told by their length first (isHeaderNamed: lowered only
      // when written in another case).
      switch (name.length) {
        case 14:
          if (isHeaderNamed(name, 'content-length')) flags |= HAS_LENGTH;
          break;
        case 17:
          if (isHeaderNamed(name, 'transfer-encoding')) continue; // the framing is decided here
          break;
        case 4:
          if (isHeaderNamed(name, 'date')) flags |= HAS_DATE;
          break;
        case 10:
          if (isHeaderNamed(name, 'keep-alive')) continue;
          if (isHeaderNamed(name, 'connection')) {
            flags |= HAS_CONNECTION;
            if (/\bclose\b/i.test(value)) {
              flags |= CLOSES;
              this.keepAlive = false; // now: should a later line be refused, the error answer closes too
            }
          }
          break;
      }
      head += name + ': ' + value + '\r\n';
    }
    memo?.remember(generation, differs, status, '', headers);
    this.#declared = flags;
    return head;
  }

  /** `head` and the headers setHeader set (which replace the list's of their name), checked. */
  #extraLines(head: string): string {
    for (const [lower, [name, value]] of this.#extra!) {
      if (!isWritableField(name) || !isWritableField(value)) throw new TypeError(`invalid response header ${JSON.stringify(name)}: control characters and characters past latin1 are not allowed`);
      if (lower === 'connection' && /\bclose\b/i.test(value)) this.keepAlive = false;
      if (lower === 'connection') this.#declared |= HAS_CONNECTION;
      if (lower === 'content-length') this.#declared |= HAS_LENGTH;
      head += name + ': ' + value + '\r\n';
    }
    return head;
  }

  /** Sends the headers now (an SSE stream starts before its first event). */
  flushHeaders(): void {
    if (this.headersSent || this.destroyed) return;
    this.#sink.send(this, this.#head(null), false);
  }

  write(chunk: Buffer | string): boolean {
    if (this.writableEnded || this.destroyed) return false;
    const head = this.headersSent ? '' : this.#head(null);
    if (this.#noBodyRequest || chunk.length === 0) return head === '' ? true : this.#sink.send(this, head, false);
    return this.#sink.send(this, this.#frame(head, chunk), false);
  }

  end(chunk?: Buffer | string): this {
    if (this.writableEnded) return this;
    if (this.destroyed) {
      this.writableEnded = true;
      return this;
    }
    // Answered: the rest of the request's body is not wanted (and must not hold the connection).
    this.request?.discardBody?.();
    const body = chunk === undefined || this.#noBodyRequest ? null : chunk;
    // A bad header throws here, before anything is sent or the response counts as ended.
    const head = this.headersSent ? '' : this.#head(chunk === undefined ? 0 : Buffer.byteLength(chunk));
    this.writableEnded = true;
    let data: string | Buffer = head;
    if (body !== null && body.length > 0) data = this.#frame(head, body);
    if (this.#chunked) data = typeof data === 'string' ? data + '0\r\n\r\n' : Buffer.concat([data, TERMINATOR]);
    this.#sink.send(this, data, true);
    return this;
  }

  /** `head` (maybe empty) and one body chunk, framed for the wire. */
  #frame(head: string, chunk: Buffer | string): string | Buffer {
    const body = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const prefix = this.#chunked ? head + body.length.toString(16) + '\r\n' : head;
    const suffix = this.#chunked ? CRLF : null;
    if (prefix.length === 0 && suffix === null) return body;
    // One buffer for one write, the head written straight into it (latin1: a byte a character,
    // #head refused any past it) rather than made a Buffer of its own and concatenated.
    const out = Buffer.allocUnsafe(prefix.length + body.length + (suffix === null ? 0 : suffix.length));
    out.write(prefix, 0, 'latin1');
    body.copy(out, prefix.length);
    if (suffix !== null) suffix.copy(out, prefix.length + body.length);
    return out;
  }

  /** Cuts the connection: the client sees a failure, not a truncated success. */
  destroy(): void {
    if (this.destroyed) return;
    this.#sink.destroy();
  }

  /** The connection is gone: no more writes; `close` without `finish`. */
  abort(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    process.nextTick(emitClose, this);
  }

  /** The last bytes were handed to the socket. */
  finished(): void {
    if (this.writableFinished || this.destroyed) return;
    this.writableFinished = true;
    this.destroyed = true;
    this.emit('finish');
    this.emit('close');
  }
}

const CRLF = Buffer.from('\r\n');
const TERMINATOR = Buffer.from('0\r\n\r\n');

function emitClose(response: WireResponse): void {
  response.emit('close');
}
