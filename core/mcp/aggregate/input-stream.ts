/**
 * The GET stream the gateway holds on a legacy backend's session for the modern clients of an
 * implicit session: where a legacy server asks for input when it cannot ask on the call's own
 * stream (an SDK server in JSON response mode, or one asking through its session rather than the
 * request). 2026-07-28 has no such stream, and takes a server's request only as the
 * `input_required` answer of a call (MRTR) — a `subscriptions/listen` stream carries only the
 * notifications it asked for. So a request heard here is handed to the endpoint, which asks it
 * in the call it belongs to (aggregated-endpoint.ts); notifications (list changes) update the
 * session's lists; nothing else goes anywhere.
 *
 * Opened with the first call of a client that declared it can be asked (elicitation, sampling or
 * roots), on that call's credentials, before the call is sent: the backend drops what it would
 * send on a stream that is not open yet. It lives as long as the session here, and is opened
 * again by the next call when it ends.
 */
import type { Context } from '../../plugin-api/context.ts';
import type { GatewayError } from '../../base/errors.ts';
import type { AnswerHead, Overflow } from '../../upstream/answer-reader.ts';
import { MessageExchange } from '../../upstream/message-exchange.ts';
import { answerTooLarge } from '../../upstream/upstreams.ts';
import type { JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import type { SseEvent } from '../../protocol/sse.ts';
import type { BackendLink } from './backend-link.ts';
import type { BackendSessionRecord } from './session-store.ts';
import { eventMessage } from './toward-client.ts';

/** What the stream reports to whoever holds it. */
export interface InputStreamOwner {
  /** The backend asked the client something. */
  request(stream: InputStream, request: JsonRpcRequest): void;
  /** A notification (list changes, and what nobody here takes). */
  notification(stream: InputStream, message: JsonRpcMessage): void;
  /** The stream ended; `status` is the backend's refusal (its HTTP status), or null after it was open. */
  ended(stream: InputStream, status: number | null): void;
}

export class InputStream extends MessageExchange {
  readonly link: BackendLink;
  /** The backend session the stream belongs to. */
  readonly record: BackendSessionRecord;
  /** The credentials it was opened with, which answers to the backend's requests are sent on too. */
  readonly ctx: Context;
  /** Settles when the backend answered the GET (true: the stream is open), or it failed. */
  readonly opened: Promise<boolean>;
  #open: ((open: boolean) => void) | null = null;
  readonly #owner: InputStreamOwner;
  /** The backend answered with its stream (a 200 event stream). */
  #streamed = false;
  #status = 0;
  #ended = false;

  constructor(owner: InputStreamOwner, ctx: Context, link: BackendLink, record: BackendSessionRecord) {
    super(link.backend, link.metrics);
    this.#owner = owner;
    this.ctx = ctx;
    this.link = link;
    this.record = record;
    this.opened = new Promise<boolean>((resolve) => (this.#open = resolve));
  }

  /** Whether the backend keeps the stream open now. */
  get isOpen(): boolean {
    return this.#streamed && !this.#ended;
  }

  protected override get standing(): boolean {
    return true;
  }

  protected answered(head: AnswerHead, streamed: boolean): boolean {
    this.#status = head.status;
    this.#streamed = streamed && head.status === 200;
    this.#settleOpen(this.#streamed);
    return true;
  }

  protected events(events: readonly SseEvent[]): boolean {
    if (!this.#streamed) return true;
    for (const event of events) {
      const message = eventMessage(event);
      if (message === null || !('method' in message)) continue; // a response is nobody's here
      if ('id' in message) this.#owner.request(this, message as JsonRpcRequest);
      else this.#owner.notification(this, message);
    }
    return true;
  }

  /** One event may not grow without end: the stream ends (the next call opens it again). */
  protected override tooLarge(what: Overflow): void {
    this.ctx.log(answerTooLarge(this.backend, what));
    this.cancel();
  }

  protected streamEnded(): void {
    this.#finish(this.#streamed ? null : this.#status);
  }

  protected bodyRead(): void {
    // A refusal's body: its status says enough.
    this.#finish(this.#status);
  }

  protected fail(_error: GatewayError): void {
    this.#finish(!this.#streamed && this.#status !== 0 ? this.#status : null);
  }

  override cancel(): void {
    const refused = !this.#streamed && this.#status !== 0;
    super.cancel();
    this.#finish(refused ? this.#status : null);
  }

  /** Ends the stream (the session is over here). */
  close(): void {
    this.cancel();
  }

  #finish(status: number | null): void {
    this.#settleOpen(false);
    if (this.#ended) return;
    this.#ended = true;
    this.#owner.ended(this, status);
  }

  #settleOpen(open: boolean): void {
    const resolve = this.#open;
    this.#open = null;
    resolve?.(open);
  }
}
