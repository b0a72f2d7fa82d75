/**
 * The GET of a legacy HTTP+SSE channel: the one long-lived response on which the server sends
 * everything (its `endpoint` event first, then every message, responses included). An
 * UpstreamHandler the backend's stream transport reports to; it reads the events with
 * `SseParser`, each bounded by the backend's `maxResponseBytes`, and hands them to its channel.
 * It never throws into the transport: whatever the server sends ends, at worst, this stream.
 */
import { formatSize } from '../../config/size.ts';
import { SseParser, type SseEvent } from '../../protocol/sse.ts';
import type { BackendTransport, Carrier, UpstreamError, UpstreamHandler } from '../transport.ts';

/** What the stream reports to its channel. */
export interface EventStreamOwner {
  /** One complete event; the stream stops reading when the owner closed during it. */
  event(event: SseEvent): void;
  /** The stream ended or could not be opened: `reason` follows `backend "<name>" ` (null: `error` says why). */
  ended(reason: string | null, error: UpstreamError | null): void;
  /** Whether the channel is closed: nothing more is read then. */
  readonly isClosed: boolean;
}

const EVENT_STREAM = /^\s*text\/event-stream\s*(;|$)/i;

/** Longest header value quoted in a refusal (the server chose it). */
const MAX_QUOTED = 100;

export class EventStreamReader implements UpstreamHandler {
  readonly #owner: EventStreamOwner;
  readonly #parser: SseParser;
  readonly #maxEventBytes: number;
  #transport: BackendTransport | null = null;
  #carrier: Carrier | null = null;
  /** The 200 with an event stream came: a failure now ends an open stream. */
  #open = false;
  /** Reported (or aborted): nothing more reaches the owner. */
  #done = false;

  constructor(owner: EventStreamOwner, maxEventBytes: number) {
    this.#owner = owner;
    this.#maxEventBytes = maxEventBytes;
    this.#parser = new SseParser(maxEventBytes);
  }

  /** Whether the response head (200, an event stream) has arrived. */
  get open(): boolean {
    return this.#open;
  }

  /** Opens the stream: GET `path` on `transport`, its head within `timeoutMs` (then no deadline: the stream lasts as long as the session). */
  dispatch(transport: BackendTransport, path: string, headers: readonly string[], timeoutMs: number): void {
    this.#transport = transport;
    transport.dispatch(this, 'GET', path, headers, null, timeoutMs, 0);
  }

  attach(carrier: Carrier): void {
    this.#carrier = carrier;
    // Dispatched after the channel closed (a transport that queued it): it stops at once.
    if (this.#done) this.abort();
  }

  onHeaders(status: number, headers: string[]): boolean {
    if (this.#done) return false;
    if (status !== 200) return this.#refuse(`could not open its event stream (HTTP ${status})`);
    const type = contentType(headers);
    if (type === null || !EVENT_STREAM.test(type)) {
      const said = type === null ? 'no content-type' : `content-type ${JSON.stringify(type.slice(0, MAX_QUOTED))}`;
      return this.#refuse(`could not open its event stream (it answered 200 with ${said}, not text/event-stream)`);
    }
    this.#open = true;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#done || this.#owner.isClosed) return false;
    const events = this.#parser.push(chunk);
    for (const event of events) {
      this.#owner.event(event);
      if (this.#owner.isClosed) return false;
    }
    if (this.#parser.tooLarge) {
      return this.#refuse(`sent an event larger than ${formatSize(this.#maxEventBytes)} on its event stream (operational.maxBackendResponseSize)`);
    }
    return true;
  }

  onComplete(): void {
    this.#carrier = null;
    this.#report('closed its event stream', null);
  }

  onError(error: UpstreamError): void {
    this.#carrier = null;
    this.#report(null, error);
  }

  /** Stops reading (the channel closed): the transport reports nothing more. */
  abort(): void {
    this.#done = true;
    const carrier = this.#carrier;
    this.#carrier = null;
    if (carrier !== null && carrier.handler === this) carrier.abort();
    else if (carrier === null) this.#transport?.cancel(this);
  }

  /** The answer is not an event stream the channel can use: it ends here, with `reason`. */
  #refuse(reason: string): false {
    this.#report(reason, null);
    this.abort();
    return false;
  }

  #report(reason: string | null, error: UpstreamError | null): void {
    if (this.#done) return;
    this.#done = true;
    this.#owner.ended(reason, error);
  }
}

/** The response's content-type value, or null. */
function contentType(headers: readonly string[]): string | null {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === 'content-type') return headers[i + 1]!;
  }
  return null;
}
