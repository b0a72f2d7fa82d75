/**
 * An exchange that reads its backend's answer as MCP carries it: the head once, as what it is;
 * then events one by one, or one body whole; then the end. A subclass decides only what the
 * answer means to its client (the gateway's own calls, routed requests, GET streams, transparent
 * answers with hooks); how it came is the transport's business:
 *
 *  - over HTTP (the pool), as a response: read here through answer-reader.ts, which holds the
 *    media-type rules and the bounds (a bound passed stops the backend exchange and fails it
 *    naming the bound: `tooLarge`, which a subclass may word for its client);
 *  - from a channel (stdio, legacy SSE), as messages (`MessageReader`, transport.ts): no HTTP
 *    to read, and the channel bounds what it sends (channel-answer.ts).
 */
import { Buffer } from 'node:buffer';
import type { GatewayError } from '../base/errors.ts';
import type { SseEvent } from '../protocol/sse.ts';
import { AnswerReader, readAnswerHead, type AnswerHead, type Overflow } from './answer-reader.ts';
import { Exchange } from './exchange.ts';
import type { MessageReader } from './transport.ts';
import { answerTooLarge } from './upstreams.ts';

const EMPTY = Buffer.alloc(0);

export abstract class MessageExchange extends Exchange implements MessageReader {
  /** The HTTP answer's reader; null when the answer came as messages. */
  #reader: AnswerReader | null = null;
  /** An answer given as messages: whether it is events, its body, its bytes. */
  #streamed = false;
  #body: Buffer | null = null;
  #bytes = 0;

  /** This exchange reads messages: a transport that has them gives them as they are. */
  get messages(): MessageReader {
    return this;
  }

  /**
   * A standing stream (a GET stream): no one answer, so only each event is bounded, not their
   * sum. Read when the head arrives.
   */
  protected get standing(): boolean {
    return false;
  }

  // ---- an HTTP answer (Exchange's steps) ----

  protected head(status: number, headers: string[]): boolean {
    const head = readAnswerHead(status, headers);
    this.#reader = new AnswerReader(head, this.backend.maxResponseBytes, this.standing);
    return this.answered(head, this.#reader.events);
  }

  protected data(chunk: Buffer): boolean {
    const read = this.#reader!.push(chunk);
    if (typeof read === 'string') {
      this.tooLarge(read);
      return false;
    }
    return read.length === 0 || this.events(read);
  }

  protected end(): void {
    const reader = this.#reader;
    if (reader === null) {
      if (this.#streamed) this.streamEnded();
      else this.bodyRead(this.#body ?? EMPTY);
    } else if (reader.events) this.streamEnded();
    else this.bodyRead(reader.body());
  }

  // ---- an answer as messages (MessageReader): the same steps, guarded as Exchange guards its own ----

  onAnswer(head: AnswerHead, streamed: boolean): boolean {
    if (!this.headArrived(head.status)) return false;
    this.#streamed = streamed;
    try {
      return this.answered(head, streamed);
    } catch (err) {
      this.broken(err);
      return false;
    }
  }

  onEvents(events: readonly SseEvent[]): boolean {
    if (this.cancelled) return false;
    for (let i = 0; i < events.length; i++) this.#bytes += Buffer.byteLength(events[i]!.data);
    try {
      return this.events(events);
    } catch (err) {
      this.broken(err);
      return false;
    }
  }

  onBody(body: Buffer): void {
    this.#body = body;
    this.#bytes += body.length;
  }

  // ---- for subclasses ----

  /** Bytes of the answer's body received so far. */
  protected get answerBytes(): number {
    return this.#reader?.size ?? this.#bytes;
  }

  /** What is left of an unterminated event at the end of the stream ('' when none). */
  protected rest(): string {
    return this.#reader?.rest() ?? '';
  }

  /** The answer went past a bound: the backend exchange stops, and the exchange fails naming the bound. */
  protected tooLarge(what: Overflow): void {
    this.cancel();
    this.fail(answerTooLarge(this.backend, what));
  }

  /**
   * The answer's head: `streamed` says its body is read as events (an event stream in a 2xx),
   * else it is read whole. Return false to read no further (after cancelling or failing).
   */
  protected abstract answered(head: AnswerHead, streamed: boolean): boolean;
  /** Events of the stream, in order (never an empty list). Return false to pause (backpressure). */
  protected abstract events(events: readonly SseEvent[]): boolean;
  /** The event stream ended (`rest()` holds an unterminated last event). */
  protected abstract streamEnded(): void;
  /** The body, read whole (a refusal's, other than JSON, only in part: answer-reader.ts). */
  protected abstract bodyRead(body: Buffer): void;
  protected abstract override fail(error: GatewayError): void;
}
