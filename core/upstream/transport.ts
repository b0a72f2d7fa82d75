/**
 * The seam between the gateway and a backend's transport. Everything the gateway sends a
 * backend (its own calls, routed requests, GET streams, DELETE) is one exchange handed to the
 * backend's `BackendTransport`: a call (POST), a stream opened (GET) or a session ended (DELETE),
 * answered in the shape of a streamable-HTTP response (a status, headers, body chunks: a JSON
 * body, or `text/event-stream` events), completion or an `UpstreamError`. That shape is MCP's own
 * framing of messages, so one reading of answers serves every transport:
 *
 *  - streamable HTTP: `Pool` (pool.ts), keep-alive connections to the backend's origin;
 *  - stdio and legacy HTTP+SSE (2024-11-05): `ChannelTransport` (channel/channel-transport.ts),
 *    which answers in-process, as a streamable-HTTP server would, from messages exchanged with
 *    a child process or an SSE connection (no socket, no HTTP parsing on the way).
 *
 * An exchange that reads messages (message-exchange.ts) says so (`UpstreamHandler.messages`):
 * a channel then gives it the messages as they are (the head, events or a body), and an HTTP
 * answer is read into the same terms by one reader (answer-reader.ts: the media-type rules and
 * the bounds). Only the transparent pass-through (mcp/pipe.ts) takes bytes, which every
 * transport gives it, so a backend's answer can pass to its client untouched.
 *
 * A transport answers each dispatch exactly once with `onComplete` or `onError`, never throws
 * out of `dispatch`, and calls `attach` before the first report of an exchange.
 */
import type { SseEvent } from '../protocol/sse.ts';
import type { AnswerHead } from './answer-reader.ts';
import type { UpstreamError } from './upstream-error.ts';

export { UpstreamError } from './upstream-error.ts';

/** What carries one exchange once it is under way: the exchange can stop it, or resume reading after backpressure. */
export interface Carrier {
  /** The exchange it carries now (null once done): an abort is for that one only. */
  readonly handler: UpstreamHandler | null;
  abort(): void;
  resume(): void;
}

/** What a transport reports to the exchange it serves. */
export interface UpstreamHandler {
  /** The carrier of the exchange (called when the request is under way). */
  attach(carrier: Carrier): void;
  /** Return false to pause reading (backpressure); call `carrier.resume()` later. */
  onHeaders(status: number, headers: string[]): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(): void;
  onError(error: UpstreamError): void;
  /**
   * The exchange's reading of messages, for a transport that has its answer as messages already
   * (a channel): the head, then events or the body, then `onComplete`, with no HTTP on the way.
   * Absent or null: the exchange takes the bytes (the transparent pass-through), which every
   * transport must then give it.
   */
  readonly messages?: MessageReader | null;
}

/** An answer given as messages (`UpstreamHandler.messages`), in the terms answer-reader.ts reads HTTP into. */
export interface MessageReader {
  /** The head; `streamed`: the messages come as events (else as one body). Return false to pause. */
  onAnswer(head: AnswerHead, streamed: boolean): boolean;
  /** Events, in order. Return false to pause. */
  onEvents(events: readonly SseEvent[]): boolean;
  /** The body (one message), before `onComplete`. */
  onBody(body: Buffer): void;
}

/** How exchanges reach one backend. */
export interface BackendTransport {
  /**
   * Sends one request. Its response head must come within `timeoutMs`; with `answerTimeoutMs`
   * (> 0), its whole answer within that, both from now.
   */
  dispatch(handler: UpstreamHandler, method: string, path: string, headers: readonly string[], body: Buffer | null, timeoutMs: number, answerTimeoutMs?: number): void;
  /** Forgets a request not yet under way whose client went away. */
  cancel(handler: UpstreamHandler): void;
  /** What a dispatch of a long-lived stream would be refused with now (null: it would be taken), so a caller answers before it commits. */
  refusal(): UpstreamError | null;
  /** Ends every exchange and what the transport holds (connections, children). */
  close(): void | Promise<void>;
}
