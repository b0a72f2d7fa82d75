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
 * Whoever reads messages reads them through one reader (answer-reader.ts, behind
 * message-exchange.ts): the head as what it is, then events one by one or a body whole, with one
 * set of bounds. Only the transparent pass-through (mcp/pipe.ts) takes the bytes as they come,
 * which is what lets a client's answer pass untouched whatever carried it.
 *
 * A transport answers each dispatch exactly once with `onComplete` or `onError`, never throws
 * out of `dispatch`, and calls `attach` before the first report of an exchange.
 */
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
