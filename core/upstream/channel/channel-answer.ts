/**
 * The answer a channel backend gives one exchange, shaped as a streamable-HTTP server shapes it:
 * a POST's requests get `application/json` when their one response is all there is to say, else
 * `text/event-stream` with the messages that relate to them and then the responses; a GET gets
 * the session's stream. The head waits for the first message (or for half the exchange's head
 * deadline, so a long call without messages is not taken for a dead backend).
 *
 * An exchange that reads messages (`UpstreamHandler.messages`) is given them as they are: the
 * head, then events or the body, with no HTTP written or read on the way. Only the transparent
 * pass-through, which passes bytes, gets them framed as the HTTP answer would carry them.
 *
 * Backpressure: while the exchange is paused, what comes is held, bounded by the backend's
 * `maxResponseBytes`, as an HTTP backend's answer is; past it the exchange fails naming the bound.
 */
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import type { BackendInfo } from '../../plugin-api/backend.ts';
import { formatSize } from '../../config/size.ts';
import type { SseEvent } from '../../protocol/sse.ts';
import type { AnswerHead } from '../answer-reader.ts';
import type { Carrier, MessageReader, UpstreamHandler } from '../transport.ts';
import { UpstreamError } from '../upstream-error.ts';

const SSE_HEAD = ['content-type', 'text/event-stream', 'cache-control', 'no-cache'];
const JSON_HEAD = ['content-type', 'application/json'];
/** What a paused GET stream may hold before it is ended. */
const STANDING_HOLD_BYTES = 1024 * 1024;

/** One message of an event stream, given as an event: its text as it would be framed is made only if asked for (a pass-through of a hooked stream). */
class MessageEvent implements SseEvent {
  readonly id = null;
  readonly event = 'message';
  readonly retry = null;
  readonly data: string;
  constructor(data: string) {
    this.data = data;
  }
  get raw(): string {
    return framed(this.data);
  }
}

const framed = (text: string): string => `event: message\ndata: ${text}\n\n`;

/** What an answer tells the one that made it: it is done (answered, failed or abandoned). */
export interface AnswerOwner {
  answerEnded(answer: ChannelAnswer, abandoned: boolean): void;
}

export class ChannelAnswer implements Carrier {
  handler: UpstreamHandler | null;
  readonly backend: BackendInfo;
  readonly #owner: AnswerOwner;
  /** The handler's reading of messages: given the messages as they are (null: it takes bytes, the pass-through). */
  readonly #reader: MessageReader | null;
  /** The answer is a stream for as long as the session lasts (GET), not a POST's. */
  readonly standing: boolean;
  /** `Mcp-Session-Id` of the head, when it names one (initialize's answer). */
  readonly #sessionId: string | null;
  /** Requests of the POST not answered yet. */
  unanswered: number;
  /** performance.now() by which the head goes out anyway; 0 once it has. */
  headBy: number;
  /** performance.now() by which the whole answer must be in; 0: no bound. */
  readonly answerBy: number;
  #headSent = false;
  /** The answer is one JSON body (else an event stream). */
  #json = false;
  #paused = false;
  /** Messages (their text) held while the exchange is paused; null marks the end. */
  #held: (string | null)[] | null = null;
  #heldBytes = 0;
  #sentBytes = 0;
  #ended = false;

  constructor(handler: UpstreamHandler, backend: BackendInfo, owner: AnswerOwner, options: { standing: boolean; requests: number; sessionId: string | null; timeoutMs: number; answerTimeoutMs: number }) {
    this.handler = handler;
    this.backend = backend;
    this.#owner = owner;
    this.#reader = handler.messages ?? null;
    this.standing = options.standing;
    this.unanswered = options.requests;
    this.#sessionId = options.sessionId;
    const now = performance.now();
    this.headBy = now + Math.min(options.timeoutMs / 2, 10_000);
    this.answerBy = options.answerTimeoutMs > 0 ? now + options.answerTimeoutMs : 0;
    handler.attach(this);
    if (this.standing) this.#head(false);
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** One message of the answer (serialized); `final`: it is the response to the last unanswered request. */
  message(text: string, final: boolean): void {
    if (this.#ended) return;
    if (!this.#headSent) {
      if (final) {
        // The one response is all the answer says: a JSON body, as most servers answer a call.
        this.#head(true);
        this.#write(text);
        this.#finish();
        return;
      }
      this.#head(false);
    }
    this.#write(text);
    if (final) this.#finish();
  }

  /** Half the head deadline passed with nothing to say: the event stream opens, so the call may run long. */
  keepAlive(): void {
    if (!this.#headSent && !this.#ended) this.#head(false);
  }

  /** The answer fails (the channel closed, a deadline passed); once. */
  fail(error: UpstreamError): void {
    if (this.#ended) return;
    this.#ended = true;
    const handler = this.handler;
    this.handler = null;
    this.#owner.answerEnded(this, false);
    handler?.onError(error);
  }

  /** A standing stream ends cleanly (its session ended). */
  end(): void {
    if (!this.#ended) this.#finish();
  }

  // ---- Carrier ----

  abort(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.handler = null;
    this.#owner.answerEnded(this, true);
  }

  resume(): void {
    if (!this.#paused || this.#ended) return;
    this.#paused = false;
    const held = this.#held;
    this.#held = null;
    this.#heldBytes = 0;
    if (held === null) return;
    for (let i = 0; i < held.length; i++) {
      const text = held[i]!;
      if (this.#paused) {
        this.#hold(text);
        continue;
      }
      if (text === null) {
        this.#complete();
        return;
      }
      this.#deliver(text);
    }
  }

  #head(json: boolean): void {
    this.#headSent = true;
    this.#json = json;
    this.headBy = 0;
    const headers = [...(json ? JSON_HEAD : SSE_HEAD)];
    if (this.#sessionId !== null) headers.push('mcp-session-id', this.#sessionId);
    if (this.#reader !== null) {
      const head: AnswerHead = { status: 200, kind: json ? 'json' : 'events', mediaType: headers[1]!, encoding: null, sessionId: this.#sessionId, headers };
      if (this.#reader.onAnswer(head, !json) === false) this.#paused = true;
    } else if (this.handler?.onHeaders(200, headers) === false) this.#paused = true;
  }

  #write(text: string): void {
    const size = Buffer.byteLength(text);
    this.#sentBytes += size;
    // A POST's answer is bounded in all, as an HTTP backend's is; a standing stream event by event.
    if ((this.standing ? size : this.#sentBytes) > this.backend.maxResponseBytes) {
      this.fail(new UpstreamError('ECHANNEL_TOO_LARGE', `sent ${this.standing ? 'an event' : 'an answer'} larger than ${formatSize(this.backend.maxResponseBytes)} (operational.maxBackendResponseSize)`));
      return;
    }
    if (this.#paused) this.#hold(text, size);
    else this.#deliver(text);
  }

  #hold(text: string | null, size = text === null ? 0 : Buffer.byteLength(text)): void {
    (this.#held ??= []).push(text);
    this.#heldBytes += size;
    // A session's GET stream holds less for a client that does not read (256 of them may be open, a shared child's every notification copied into each): it ends, and the client opens it again.
    const bound = this.standing ? Math.min(STANDING_HOLD_BYTES, this.backend.maxResponseBytes) : this.backend.maxResponseBytes;
    if (this.#heldBytes > bound) this.fail(new UpstreamError('ECHANNEL_TOO_LARGE', `sent more than its client took in: over ${formatSize(bound)} waited`));
  }

  /** A message to the exchange: as a message to one that reads them, else framed as the HTTP answer would carry it. */
  #deliver(text: string): void {
    if (this.handler === null) return;
    const reader = this.#reader;
    if (reader === null) {
      if (this.handler.onData(Buffer.from(this.#json ? text : framed(text))) === false) this.#paused = true;
    } else if (this.#json) reader.onBody(Buffer.from(text));
    else if (reader.onEvents([new MessageEvent(text)]) === false) this.#paused = true;
  }

  #finish(): void {
    if (this.#paused) {
      // null marks the end among what is held.
      this.#hold(null);
      return;
    }
    this.#complete();
  }

  #complete(): void {
    if (this.#ended) return;
    this.#ended = true;
    const handler = this.handler;
    this.handler = null;
    this.#owner.answerEnded(this, false);
    handler?.onComplete();
  }
}
