/**
 * An HTTP request as Gatehouse's own server (wire/server.ts) hands it over: the parts of
 * node:http's IncomingMessage the gateway uses — method, url, rawHeaders, a lazily built
 * `headers` object, the socket — and the body as `data` / `end` / `error` / `close` events.
 *
 * Body chunks that arrive before anyone listens are kept (an async authenticate hook may run
 * first) and replayed, in order and asynchronously, once a `data` listener is attached, as a
 * Readable would do. The gateway's own reader (body.ts) takes them without events
 * (`readInto`): four listeners added and removed a request cost more than the body's bytes — each
 * `on` and removal a megamorphic store or delete on the emitter's `_events`, whose shapes every
 * emitter of the process shares. While nobody reads, the connection stops reading from the socket past a
 * small buffer, so an unread body cannot grow memory.
 */
import { LazyEventEmitter } from './lazy-emitter.ts';
import type { Socket } from 'node:net';
import process from 'node:process';
import type { BodyReader } from '../types.ts';

/** Headers Node keeps once (later repeats are dropped); the others are joined with ", ". */
const SINGLE = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host',
  'if-modified-since', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards',
  'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent',
]);

/** Unread body bytes kept before the socket stops being read. */
const UNREAD_LIMIT = 64 * 1024;
/**
 * What a kept chunk counts for besides its bytes: its Buffer object, some 200 bytes of heap, so
 * that a body of 1-byte chunks stops the reading after ~300 of them, not 64 Ki.
 */
const CHUNK_COST = 200;

/** What the request needs from its connection. */
export interface BodySource {
  /** Stop / restart reading the socket (backpressure of an unread body). */
  pauseReading(): void;
  resumeReading(): void;
}

export class WireRequest extends LazyEventEmitter {
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: string[];
  readonly httpVersion: string;
  readonly socket: Socket;
  #headers: Record<string, string> | null = null;
  readonly #source: BodySource;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #flowing = false;
  #flushScheduled = false;
  /** The whole body has arrived. */
  complete = false;
  #endEmitted = false;
  #closed = false;
  /** Who reads the body instead of `data` / `end` listeners (readInto), until its end or failure. */
  #reader: BodyReader | null = null;

  constructor(method: string, url: string, rawHeaders: string[], httpVersion: string, socket: Socket, source: BodySource) {
    super();
    this.method = method;
    this.url = url;
    this.rawHeaders = rawHeaders;
    this.httpVersion = httpVersion;
    this.socket = socket;
    this.#source = source;
  }

  /** Request headers by lower-case name, built on first use (the hot path reads rawHeaders). */
  get headers(): Record<string, string> {
    if (this.#headers !== null) return this.#headers;
    // No prototype: a header named `__proto__` or `constructor` is a header like any other.
    const headers = Object.create(null) as Record<string, string>;
    const raw = this.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const value = raw[i + 1]!;
      const existing = headers[name];
      if (existing === undefined) headers[name] = value;
      else if (!SINGLE.has(name)) headers[name] = existing + ', ' + value;
    }
    this.#headers = headers;
    return headers;
  }

  override on(event: string | symbol, listener: (...args: never[]) => void): this {
    super.on(event, listener as (...args: unknown[]) => void);
    if (event === 'data' && !this.#flowing) {
      this.#flowing = true;
      this.#scheduleFlush();
    }
    return this;
  }

  override addListener(event: string | symbol, listener: (...args: never[]) => void): this {
    return this.on(event, listener);
  }

  readInto(reader: BodyReader): void {
    this.#reader = reader;
    if (this.#closed && !this.complete) {
      // The client left before the body came whole (while an async hook ran): told so, as a
      // `close` listener would have been, on the next tick.
      process.nextTick(readerGone, this);
      return;
    }
    if (this.#flowing) return;
    this.#flowing = true;
    // Nothing arrived yet (the MCP endpoint reads as the head is parsed, before its body's first
    // byte): the chunks and the end go to the reader as the parser gives them, as to a `data`
    // listener on a flowing request, with no tick to replay what is not there.
    if (this.#pending.length === 0 && !this.complete) return;
    this.#scheduleFlush();
  }

  #deliver(chunk: Buffer): void {
    const reader = this.#reader;
    if (reader === null) this.emit('data', chunk);
    else if (!reader.chunk(chunk)) {
      // Refused: what arrives from now on is kept as when paused (and bounded so).
      this.#reader = null;
      this.#flowing = false;
    }
  }

  /** A body chunk from the parser. */
  push(chunk: Buffer): void {
    // Answered already, or gone: nobody will read it, so it is not kept (nor does it stop the
    // connection being read: behind it may be the client's FIN that ends a stream).
    if (this.#discarding) return;
    if (this.#flowing && this.#pending.length === 0 && !this.#flushScheduled) {
      this.#deliver(chunk);
      return;
    }
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length + CHUNK_COST;
    if (this.#pendingBytes > UNREAD_LIMIT) this.#source.pauseReading();
  }

  /** The parser reached the end of the body. */
  finish(): void {
    this.complete = true;
    if (this.#flowing && this.#pending.length === 0 && !this.#flushScheduled) this.#emitEnd();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    process.nextTick(flush, this);
  }

  /** Replays what arrived before anyone listened. */
  flushPending(): void {
    this.#flushScheduled = false;
    const pending = this.#pending;
    this.#pending = [];
    const wasLimited = this.#pendingBytes > UNREAD_LIMIT;
    this.#pendingBytes = 0;
    for (const chunk of pending) {
      if (!this.#flowing) {
        this.#pending.push(chunk);
        continue;
      }
      this.#deliver(chunk);
    }
    if (wasLimited) this.#source.resumeReading();
    if (this.complete && this.#pending.length === 0) this.#emitEnd();
  }

  #emitEnd(): void {
    if (this.#endEmitted) return;
    this.#endEmitted = true;
    const reader = this.#reader;
    if (reader !== null) {
      this.#reader = null;
      reader.end();
    } else {
      this.emit('end');
    }
    this.destroyRequest();
  }

  /** node:http compatibility: stop delivering body chunks (they are kept). */
  pause(): this {
    this.#flowing = false;
    return this;
  }

  resume(): this {
    if (!this.#flowing) {
      this.#flowing = true;
      this.#scheduleFlush();
    }
    return this;
  }

  #discarding = false;

  /** Its response has ended: what is left of the body is dropped as it arrives. */
  discardBody(): void {
    if (this.#discarding || this.#endEmitted) return;
    this.#discarding = true;
    const wasLimited = this.#pendingBytes > UNREAD_LIMIT;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (wasLimited) this.#source.resumeReading();
  }

  /** The request is over (its body was delivered, or the client left): `close`, once. */
  destroyRequest(error?: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    const reader = this.#reader;
    if (reader !== null) {
      // As an 'error' listener is told at once and a 'close' listener on the next tick.
      if (error !== undefined) {
        this.#reader = null;
        reader.failed(error);
      }
    } else if (error !== undefined && !this.#endEmitted && this.listenerCount('error') > 0) {
      // An 'error' with no listener would throw: only a reader that is still waiting is told.
      this.emit('error', error);
    }
    process.nextTick(emitClose, this);
  }

  /** `close`, and a reader still waiting told that the body will not come. */
  emitClose(): void {
    this.readerGone();
    this.emit('close');
  }

  /** A reader still waiting is told that the body will not come. */
  readerGone(): void {
    const reader = this.#reader;
    if (reader === null) return;
    this.#reader = null;
    reader.failed(undefined);
  }
}

function flush(request: WireRequest): void {
  request.flushPending();
}

function emitClose(request: WireRequest): void {
  request.emitClose();
}

function readerGone(request: WireRequest): void {
  request.readerGone();
}
