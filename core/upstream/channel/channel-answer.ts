/**
 * The answer a channel backend gives one exchange, written to the exchange as a streamable-HTTP
 * server writes it: a POST's requests get `application/json` when their one response is all
 * there is to say, else `text/event-stream` with the messages that relate to them and then the
 * responses; a GET gets the session's stream. The head waits for the first message (or for half
 * the exchange's head deadline, so a long call without messages is not taken for a dead backend).
 *
 * Backpressure: while the exchange is paused, what comes is held, bounded by the backend's
 * `maxResponseBytes`, as an HTTP backend's answer is; past it the exchange fails naming the bound.
 */
import type { BackendInfo } from '../../plugin-api/backend.ts';
import { formatSize } from '../../config/size.ts';
import type { Carrier, UpstreamHandler } from '../transport.ts';
import { UpstreamError } from '../upstream-error.ts';

const SSE_HEAD = ['content-type', 'text/event-stream', 'cache-control', 'no-cache'];
const JSON_HEAD = ['content-type', 'application/json'];
/** What a paused GET stream may hold before it is ended. */
const STANDING_HOLD_BYTES = 1024 * 1024;

/** What an answer tells the one that made it: it is done (answered, failed or abandoned). */
export interface AnswerOwner {
  answerEnded(answer: ChannelAnswer, abandoned: boolean): void;
}

export class ChannelAnswer implements Carrier {
  handler: UpstreamHandler | null;
  readonly backend: BackendInfo;
  readonly #owner: AnswerOwner;
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
  #paused = false;
  #held: Buffer[] | null = null;
  #heldBytes = 0;
  #sentBytes = 0;
  #ended = false;

  constructor(handler: UpstreamHandler, backend: BackendInfo, owner: AnswerOwner, options: { standing: boolean; requests: number; sessionId: string | null; timeoutMs: number; answerTimeoutMs: number }) {
    this.handler = handler;
    this.backend = backend;
    this.#owner = owner;
    this.standing = options.standing;
    this.unanswered = options.requests;
    this.#sessionId = options.sessionId;
    const now = performance.now();
    this.headBy = now + Math.min(options.timeoutMs / 2, 10_000);
    this.answerBy = options.answerTimeoutMs > 0 ? now + options.answerTimeoutMs : 0;
    handler.attach(this);
    if (this.standing) this.#head(SSE_HEAD);
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
        this.#head(JSON_HEAD);
        this.#write(Buffer.from(text));
        this.#finish();
        return;
      }
      this.#head(SSE_HEAD);
    }
    this.#write(Buffer.from(`event: message\ndata: ${text}\n\n`));
    if (final) this.#finish();
  }

  /** Half the head deadline passed with nothing to say: the event stream opens, so the call may run long. */
  keepAlive(): void {
    if (!this.#headSent && !this.#ended) this.#head(SSE_HEAD);
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
      const chunk = held[i]!;
      if (this.#paused) {
        this.#hold(chunk);
        continue;
      }
      if (chunk.length === 0) {
        this.#complete();
        return;
      }
      this.#deliver(chunk);
    }
  }

  #head(head: readonly string[]): void {
    this.#headSent = true;
    this.headBy = 0;
    const headers = this.#sessionId === null ? [...head] : [...head, 'mcp-session-id', this.#sessionId];
    if (this.handler?.onHeaders(200, headers) === false) this.#paused = true;
  }

  #write(chunk: Buffer): void {
    this.#sentBytes += chunk.length;
    // A POST's answer is bounded in all, as an HTTP backend's is; a standing stream event by event.
    if ((this.standing ? chunk.length : this.#sentBytes) > this.backend.maxResponseBytes) {
      this.fail(new UpstreamError('ECHANNEL_TOO_LARGE', `sent ${this.standing ? 'an event' : 'an answer'} larger than ${formatSize(this.backend.maxResponseBytes)} (operational.maxBackendResponseSize)`));
      return;
    }
    if (this.#paused) this.#hold(chunk);
    else this.#deliver(chunk);
  }

  #hold(chunk: Buffer): void {
    (this.#held ??= []).push(chunk);
    this.#heldBytes += chunk.length;
    // A session's GET stream holds less for a client that does not read (256 of them may be open, a shared child's every notification copied into each): it ends, and the client opens it again.
    const bound = this.standing ? Math.min(STANDING_HOLD_BYTES, this.backend.maxResponseBytes) : this.backend.maxResponseBytes;
    if (this.#heldBytes > bound) this.fail(new UpstreamError('ECHANNEL_TOO_LARGE', `sent more than its client took in: over ${formatSize(bound)} waited`));
  }

  #deliver(chunk: Buffer): void {
    if (this.handler?.onData(chunk) === false) this.#paused = true;
  }

  #finish(): void {
    if (this.#paused) {
      // An empty chunk marks the end among what is held.
      (this.#held ??= []).push(Buffer.alloc(0));
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
