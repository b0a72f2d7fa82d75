/**
 * A backend of MCP's legacy HTTP+SSE transport (2024-11-05) as a `MessageChannel`: one GET event
 * stream (event-stream-reader.ts) on which the server announces the endpoint to POST messages to
 * (sse-endpoint.ts) and then sends every message, and one POST per message sent
 * (message-post.ts), in an order servers accept (post-queue.ts). One channel is one session of
 * the server: the stream closing ends it. Everything the server sends is bounded (an event by
 * `maxResponseBytes`, the endpoint by 8 KiB, the wait for it by `timeoutMs`), and nothing it
 * sends is written anywhere but back into this channel.
 */
import { Buffer } from 'node:buffer';
import type { Logger } from 'pino';
import type { BackendInfo } from '../../plugin-api/backend.ts';
import { MAX_NESTING, messageProblem, nestsDeeperThan, type JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import type { SseEvent } from '../../protocol/sse.ts';
import { ChannelClosed, type ChannelEvents, type ChannelOpener, type MessageChannel } from '../channel/channel.ts';
import type { BackendTransport } from '../transport.ts';
import { UpstreamError } from '../upstream-error.ts';
import { upstreamError } from '../upstreams.ts';
import { EventStreamReader, type EventStreamOwner } from './event-stream-reader.ts';
import { failedRequest, MessagePost, type PostOwner } from './message-post.ts';
import { PostQueue } from './post-queue.ts';
import { announcedEndpoint, requestTarget } from './sse-endpoint.ts';

/** How a legacy SSE backend is reached: its GET stream on one transport, its POSTs on another (so that streams never starve requests). */
export interface SseTransports {
  readonly stream: BackendTransport;
  readonly requests: BackendTransport;
}

/** Headers the channel sets itself, or that frame the request: never taken from the opener's or sender's list. */
const OWN_HEADERS = new Set(['accept', 'content-type', 'content-length', 'transfer-encoding', 'host', 'connection', 'mcp-session-id', 'last-event-id']);

/** Messages the server sent that are not JSON-RPC, logged per channel before the log says no more. */
const MAX_LOGGED_INVALID = 10;

/** Characters of an invalid message quoted in the log. */
const MAX_QUOTED = 200;

/** Opens legacy HTTP+SSE channels to `backend`: one per MCP session of it. */
export function sseOpener(backend: BackendInfo, transports: SseTransports, log: Logger | null): ChannelOpener {
  return (events, headers) => new LegacySseChannel(backend, transports, log, events, headers);
}

function onEndpointTimeout(channel: LegacySseChannel): void {
  channel.endpointLate();
}

export class LegacySseChannel implements MessageChannel, EventStreamOwner, PostOwner {
  readonly #backend: BackendInfo;
  readonly #transports: SseTransports;
  readonly #log: Logger | null;
  readonly #events: ChannelEvents;
  readonly #stream: EventStreamReader;
  readonly #posts: PostQueue;
  /** The request target of the message endpoint, once announced. */
  #endpoint: string | null = null;
  #timer: NodeJS.Timeout | null;
  #closed: ChannelClosed | null = null;
  #reported: Promise<void> | null = null;
  #invalidSeen = 0;
  #secondEndpointLogged = false;
  #pumping = false;

  constructor(backend: BackendInfo, transports: SseTransports, log: Logger | null, events: ChannelEvents, headers: readonly string[]) {
    this.#backend = backend;
    this.#transports = transports;
    this.#log = log;
    this.#events = events;
    this.#posts = new PostQueue(backend.maxResponseBytes);
    this.#stream = new EventStreamReader(this, backend.maxResponseBytes);
    this.#timer = setTimeout(onEndpointTimeout, backend.timeoutMs, this);
    this.#timer.unref();
    const list = ['accept', 'text/event-stream', 'cache-control', 'no-cache'];
    appendOwnless(list, headers);
    this.#stream.dispatch(transports.stream, backend.path, list, backend.timeoutMs);
  }

  get isClosed(): boolean {
    return this.#closed !== null;
  }

  send(text: string, headers: readonly string[]): UpstreamError | null {
    if (this.#closed !== null) return this.#closed;
    const list = ['content-type', 'application/json', 'accept', 'application/json, text/event-stream'];
    appendOwnless(list, headers);
    const post = new MessagePost(this, text, list, this.#backend.maxResponseBytes);
    if (this.#endpoint !== null && this.#posts.canStart(post)) {
      this.#posts.start(post);
      this.#dispatch(post);
      return null;
    }
    const why = this.#endpoint === null ? 'has not announced its message endpoint yet' : 'has not taken the messages sent before';
    const refused = this.#posts.hold(post, why);
    return refused === null ? null : new UpstreamError('ESSE_QUEUE_FULL', refused);
  }

  close(): Promise<void> {
    this.#close(new ChannelClosed('was closed by the gateway'));
    return this.#reported!;
  }

  // ---- the event stream (EventStreamOwner) ----

  event(event: SseEvent): void {
    if (event.event === 'endpoint') this.#announce(event.data);
    else if ((event.event === null || event.event === 'message') && event.data.length > 0) this.#receive(event.data);
    // Other events (and comments, keep-alives) are not MCP's: ignored.
  }

  ended(reason: string | null, error: UpstreamError | null): void {
    this.#close(new ChannelClosed(reason ?? streamFailure(this.#backend, error!, this.#stream.open), error ?? undefined));
  }

  /** The endpoint did not come within the backend's `timeoutMs`. */
  endpointLate(): void {
    this.#timer = null;
    if (this.#endpoint === null) this.#close(new ChannelClosed(`did not announce its message endpoint within ${this.#backend.timeoutMs} ms`));
  }

  #announce(data: string): void {
    if (this.#endpoint !== null) {
      // The session has its endpoint; another one mid-session is not followed (and told once).
      if (!this.#secondEndpointLogged) this.#log?.warn({ backend: this.#backend.name }, `backend "${this.#backend.name}" announced a second message endpoint: ignored`);
      this.#secondEndpointLogged = true;
      return;
    }
    const endpoint = announcedEndpoint(data, this.#backend.url);
    if (typeof endpoint === 'string') {
      this.#close(new ChannelClosed(endpoint));
      return;
    }
    this.#endpoint = requestTarget(endpoint);
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#pump();
  }

  #receive(data: string): void {
    const parsed = parseEventData(data);
    if (typeof parsed === 'string') {
      this.#invalid(parsed, data);
      return;
    }
    for (const item of parsed) {
      if (this.#closed !== null) return;
      const problem = messageProblem(item);
      if (problem === null) this.#deliver(item as JsonRpcMessage);
      else this.#invalid(problem, data);
    }
  }

  #deliver(message: JsonRpcMessage): void {
    try {
      this.#events.message(message);
    } catch (err) {
      // The receiver's failure is its own: the stream goes on.
      this.#log?.error({ backend: this.#backend.name, err }, `a message of backend "${this.#backend.name}" could not be handled`);
    }
  }

  #invalid(problem: string, data: string): void {
    const seen = ++this.#invalidSeen;
    if (seen > MAX_LOGGED_INVALID || this.#log === null) return;
    const name = this.#backend.name;
    const quoted = data.length > MAX_QUOTED ? data.slice(0, MAX_QUOTED) + '…' : data;
    this.#log.warn({ backend: name, problem, data: quoted }, `backend "${name}" sent a message that is not JSON-RPC on its event stream: skipped`);
    if (seen === MAX_LOGGED_INVALID) this.#log.warn({ backend: name }, `backend "${name}" sent ${MAX_LOGGED_INVALID} invalid messages on this stream: further ones are skipped without a log`);
  }

  // ---- the POSTs (PostOwner) ----

  posted(post: MessagePost, status: number, error: UpstreamError | null): void {
    this.#posts.done(post);
    if (this.#closed !== null) return;
    if (status === 404) {
      this.#close(new ChannelClosed('no longer knows its SSE session (HTTP 404)'));
      return;
    }
    if (error !== null || status < 200 || status > 299) this.#refused(post, status, error);
    this.#pump();
  }

  /** A message was not taken: each request in it is answered with an error (the call fails at once); anything else is logged. */
  #refused(post: MessagePost, status: number, error: UpstreamError | null): void {
    const name = this.#backend.name;
    const said = error === null ? `backend "${name}" refused the message (HTTP ${status})` : `backend "${name}" did not take the message: it ${reasonOf(this.#backend, error)}`;
    this.#log?.warn({ backend: name, status, body: post.snippet, requests: post.requestIds.length }, said);
    if (post.requestIds.length === 0) return;
    // Delivered after the current callback (a POST may fail inside `send`, where no event is reported).
    queueMicrotask(() => {
      for (const id of post.requestIds) {
        if (this.#closed !== null) return;
        this.#deliver(failedRequest(id, said));
      }
    });
  }

  /** Starts every waiting message whose turn it is. */
  #pump(): void {
    if (this.#pumping || this.#endpoint === null) return;
    this.#pumping = true;
    try {
      for (let post = this.#posts.next(); post !== null && this.#closed === null; post = this.#posts.next()) this.#dispatch(post);
    } finally {
      this.#pumping = false;
    }
  }

  #dispatch(post: MessagePost): void {
    const backend = this.#backend;
    post.dispatch(this.#transports.requests, this.#endpoint!, backend.timeoutMs, backend.answerTimeoutMs);
  }

  /** Ends the channel once: the stream and every POST stop, and `closed` is reported after the current callback. */
  #close(closed: ChannelClosed): void {
    if (this.#closed !== null) return;
    this.#closed = closed;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#stream.abort();
    for (const post of this.#posts.drain()) post.abort();
    this.#reported = new Promise<void>((resolve) => {
      queueMicrotask(() => {
        try {
          this.#events.closed(closed);
        } catch (err) {
          // Thrown in a microtask, it would end the process: the receiver's failure is logged.
          this.#log?.error({ backend: this.#backend.name, err }, `the end of a channel of backend "${this.#backend.name}" could not be handled`);
        }
        resolve();
      });
    });
  }
}

/** `headers` appended to `list`, less those the channel sets itself or that frame a request. */
function appendOwnless(list: string[], headers: readonly string[]): void {
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = headers[i]!;
    if (!OWN_HEADERS.has(name.toLowerCase())) list.push(name, headers[i + 1]!);
  }
}

/** The values of one event's data (a batch is several), or the problem with it. */
function parseEventData(data: string): unknown[] | string {
  if (data.length > 2 * MAX_NESTING && nestsDeeperThan(Buffer.from(data), MAX_NESTING)) return `the message nests arrays and objects more than ${MAX_NESTING} levels deep`;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return 'the data is not JSON';
  }
  if (!Array.isArray(value)) return [value];
  return value.length === 0 ? 'an empty batch' : value;
}

/** Why an exchange with `backend` failed, worded to follow `backend "<name>" ` (as the gateway tells its clients). */
function reasonOf(backend: BackendInfo, error: UpstreamError): string {
  const said = upstreamError(backend, error).message;
  const prefix = `backend "${backend.name}" `;
  return said.startsWith(prefix) ? said.slice(prefix.length) : said;
}

/** Why the event stream ended with `error`: it could not be opened, or it was lost once open. */
function streamFailure(backend: BackendInfo, error: UpstreamError, open: boolean): string {
  const reason = reasonOf(backend, error);
  return open ? `closed its event stream: it ${reason}` : reason;
}
