/**
 * An exchange that reads its backend's answer as MCP carries it (answer-reader.ts): the head
 * once, as what it is; then events one by one, or one body whole; then the end. The reading and
 * its bounds are the reader's; a subclass decides only what the answer means to its client (the
 * gateway's own calls, routed requests, GET streams, transparent answers with hooks).
 *
 * A bound passed stops the backend exchange and fails it naming the bound (`tooLarge`), which
 * the subclass may word for its client.
 */
import type { GatewayError } from '../base/errors.ts';
import type { SseEvent } from '../protocol/sse.ts';
import { AnswerReader, readAnswerHead, type AnswerHead, type Overflow } from './answer-reader.ts';
import { Exchange } from './exchange.ts';
import { answerTooLarge } from './upstreams.ts';

export abstract class MessageExchange extends Exchange {
  #reader: AnswerReader | null = null;

  /**
   * A standing stream (a GET stream): no one answer, so only each event is bounded, not their
   * sum. Read when the head arrives.
   */
  protected get standing(): boolean {
    return false;
  }

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
    const reader = this.#reader!;
    if (reader.events) this.streamEnded();
    else this.bodyRead(reader.body());
  }

  /** Bytes of the answer's body received so far. */
  protected get answerBytes(): number {
    return this.#reader?.size ?? 0;
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
