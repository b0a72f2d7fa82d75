/**
 * The client's standalone GET stream of an aggregated session: the gateway opens the GET stream
 * of every backend session and multiplexes their events into the client's one stream. A modern
 * backend has no GET stream: the gateway opens a `subscriptions/listen` of its own there
 * (listen.ts). The same multiplexing serves a modern client's `subscriptions/listen`, through
 * its filter and tagged with its subscription's id. Event ids
 * carry the last position of every backend (ids.ts), so a client that reconnects with
 * Last-Event-ID resumes each backend where it was. A backend stream that drops is reopened with
 * backoff while the client is connected; one the backend refuses because it lost the session (a
 * restart: a 404, or a 400/410 when the backend, asked, no longer knows the session) is reopened on
 * a new session once the backend has joined again (healing.ts), and so is the stream of a backend
 * that joins the session late.
 *
 * Order toward each backend: while a backend's stream is on its way (opened, its head not yet
 * back), the session's calls routed to that backend wait for it (`opening`), so a server that
 * asks the client something on its stream finds the stream there (stream-openings.ts).
 */
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import { addCorsHeaders } from '../../http/cors.ts';
import type { AnswerHead, Overflow } from '../../upstream/answer-reader.ts';
import { MessageExchange } from '../../upstream/message-exchange.ts';
import { answerTooLarge, upstreamError } from '../../upstream/upstreams.ts';
import { StreamOpenings, type StreamOpening } from '../../upstream/stream-openings.ts';
import type { JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { formatSseEvent, type SseEvent } from '../../protocol/sse.ts';
import type { OpenStream, OpenStreams } from '../streams.ts';
import { sessionVerdict, type BackendLink, type SessionVerdict } from './backend-link.ts';
import { isResumableEventId, multiplexEventId } from './ids.ts';
import { isModernVersion, META, towardModern } from '../../protocol/era.ts';
import { asksAnything, backendPart, everything, listenRequest, tagged, wanted, type ListenSpec } from './listen.ts';
import { eventMessage, eventTowardClient, towardClient } from './toward-client.ts';
import type { AggregatedSession, SessionStream } from './session.ts';
import type { BackendSessionRecord } from './session-store.ts';
import type { ListChangeGate } from './shown-lists.ts';

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 30_000;

/** Side effects of what a backend says, wherever it says it (list caches). */
export type BackendObserver = (session: AggregatedSession, message: JsonRpcMessage) => void;

/** What a client stream needs of the session's healing (healing.ts). */
export interface StreamHealing {
  /** Joins a backend to the session again (or for the first time); rejects when it cannot now. */
  join(ctx: Context, session: AggregatedSession, link: BackendLink): Promise<unknown>;
  /** Whether the backend still knows its session `record` (asked with a ping on it). */
  stillKnown(ctx: Context, link: BackendLink, record: BackendSessionRecord): Promise<boolean>;
}

/** A modern client's `subscriptions/listen` served by a ClientStream. */
export interface ModernListen {
  readonly spec: ListenSpec;
  /** What the acknowledgement says the gateway honours. */
  readonly honored: Record<string, unknown>;
  /** Backend name → the filter's resource URIs it owns. */
  readonly owned: ReadonlyMap<string, readonly string[]>;
  /** Subscribes a legacy backend's session `record` to URIs it owns (`resources/subscribe`). */
  subscribe(link: BackendLink, uris: readonly string[], record: BackendSessionRecord): void;
  /** The subscription ended (the client left, or the gateway ended it). */
  ended(): void;
  /** A legacy backend asked the client something on its session's stream, which this listen holds (it is asked in a call, not here). */
  request(link: BackendLink, record: BackendSessionRecord, request: JsonRpcRequest): void;
}

/** The GET stream of one backend session, feeding the client's stream. */
class BackendStream extends MessageExchange {
  readonly #owner: ClientStream;
  readonly #link: BackendLink;
  /** The backend session the stream belongs to. */
  readonly record: BackendSessionRecord;
  /** performance.now() when the stream opened. */
  readonly openedAt = performance.now();
  #status = 0;
  /** The backend answered with its stream (a 200 event stream). */
  #open = false;

  constructor(owner: ClientStream, link: BackendLink, record: BackendSessionRecord) {
    super(link.backend, link.metrics);
    this.#owner = owner;
    this.#link = link;
    this.record = record;
  }

  protected override get standing(): boolean {
    return true;
  }

  protected answered(head: AnswerHead, streamed: boolean): boolean {
    this.#status = head.status;
    // Only a stream (200) is read: a refusal's status says what it can (sessionVerdict).
    this.#open = streamed && head.status === 200;
    return true;
  }

  protected events(events: readonly SseEvent[]): boolean {
    if (this.#open) for (const event of events) this.#owner.backendEvent(this.#link, this, event);
    return true;
  }

  /** One event grew past the bound (a stream lives as long as its client likes; one event of it may not grow without end). */
  protected override tooLarge(what: Overflow): void {
    this.cancel();
    this.#owner.ctx.log(answerTooLarge(this.backend, what));
    this.#owner.backendEnded(this.#link, this, null);
  }

  protected bodyRead(): void {
    this.streamEnded();
  }

  protected streamEnded(): void {
    if (this.#open) this.#owner.backendEnded(this.#link, this, null);
    else this.#owner.backendEnded(this.#link, this, { status: this.#status, session: sessionVerdict(this.#status, null) });
  }

  protected fail(error: GatewayError): void {
    // The gateway's own stream limit (the last connection was taken after the client's stream
    // was admitted, or before a retry): retried like any stream that failed, and said in the log.
    if (error.code === 'stream_limit') this.#owner.ctx.log(error);
    this.#owner.backendEnded(this.#link, this, null);
  }
}

/** A backend's refusal of its GET stream: the status, and what it says about the backend session. */
interface StreamRefusal {
  readonly status: number;
  readonly session: SessionVerdict;
}
/** Refusals for a lost session in a row after which a backend's stream is given up. */
const MAX_LOST_REFUSALS = 3;
/** A backend stream up this long (ms) when an event comes has proven itself: its refusals are forgotten. */
const STABLE_MS = 60_000;

/**
 * Why a new client stream of `session` cannot open now: the first of its backends whose stream
 * connections are all in use, as the error the client gets (null when every one has room). A
 * stream is refused before its 200 rather than opened without the backends it could not reach.
 */
export function streamRefusal(session: AggregatedSession, links: ReadonlyMap<string, BackendLink>): GatewayError | null {
  for (const name of session.backends.keys()) {
    const link = links.get(name);
    if (link === undefined) continue;
    const full = link.streams.refusal();
    if (full !== null) return upstreamError(link.backend, full);
  }
  return null;
}

export class ClientStream implements SessionStream, OpenStream {
  readonly standalone = true;
  readonly ctx: Context;
  readonly #session: AggregatedSession;
  readonly #links: ReadonlyMap<string, BackendLink>;
  readonly #streams: OpenStreams;
  readonly #observe: BackendObserver;
  readonly #healing: StreamHealing;
  readonly #positions: Map<number, string>;
  readonly #backends = new Map<number, BackendStream>();
  readonly #retries = new Map<number, number>();
  readonly #lostRefusals = new Map<number, number>();
  /** Backend streams on their way, by backend index: calls to that backend wait for them. */
  readonly #openings = new StreamOpenings<number>();
  /** A modern client's subscription (null: a legacy client's GET stream). */
  readonly #listen: ModernListen | null;
  /** With plugin views: what tells the client a list changed only when it changed for it (shown-lists.ts). */
  readonly #gate: ListChangeGate | null;
  #closed = false;

  constructor(
    ctx: Context,
    session: AggregatedSession,
    links: ReadonlyMap<string, BackendLink>,
    streams: OpenStreams,
    observe: BackendObserver,
    healing: StreamHealing,
    positions: ReadonlyMap<number, string>,
    listen: ModernListen | null = null,
    gate: ListChangeGate | null = null,
  ) {
    this.#listen = listen;
    this.#gate = gate;
    this.ctx = ctx;
    this.#session = session;
    this.#links = links;
    this.#streams = streams;
    this.#observe = observe;
    this.#healing = healing;
    this.#positions = new Map(positions);
  }

  /** Answers the client's GET (or its subscriptions/listen) and opens every backend's stream. */
  open(): void {
    const headers: Record<string, string> = {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      'x-request-id': this.ctx.requestId,
    };
    if (this.#listen === null) headers['mcp-session-id'] = this.#session.id;
    addCorsHeaders(headers, this.ctx.corsOrigin);
    this.ctx.res.writeHead(200, headers);
    this.ctx.res.flushHeaders();
    if (this.#listen !== null) {
      this.#session.addListen(this);
      // The first message of a subscription: what the gateway agreed to honour.
      const ack = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { [META.subscriptionId]: this.#listen.spec.subscriptionId }, notifications: this.#listen.honored } };
      this.ctx.res.write(formatSseEvent({ event: 'message', data: JSON.stringify(ack) }));
    }
    this.ctx.inflight = { cancel: () => this.close() };
    this.#streams.add(this);
    for (const name of this.#session.backends.keys()) {
      const link = this.#links.get(name);
      if (link !== undefined) void this.#connect(link);
    }
  }

  /** What a call routed to backend `index` waits for before it is sent: its stream on its way, or null. */
  opening(index: number): Promise<void> | null {
    return this.#openings.none ? null : this.#openings.awaited(index);
  }

  /** Opens the stream of one backend; the session's calls to it wait until it is there (or could not be). */
  async #connect(link: BackendLink): Promise<void> {
    if (this.#closed || this.#backends.has(link.index)) return;
    const opening = this.#openings.begin(link.index);
    try {
      await this.#connectTo(link, opening);
    } finally {
      // No stream went out (nothing to ask, a hook refused, the backend must join first): nothing to wait for.
      if (this.#backends.get(link.index)?.opening !== opening) opening.settle();
    }
  }

  async #connectTo(link: BackendLink, opening: StreamOpening): Promise<void> {
    const backendSession = this.#session.usable(link.name);
    if (backendSession === undefined) {
      // Lost, or never joined: once it joins, backendJoined() connects it.
      this.#healing.join(this.ctx, this.#session, link).catch((err: unknown) => {
        // The session itself ended: so does its stream.
        if (err instanceof GatewayError && err.code === 'session_not_found') this.close();
        else this.#retryLater(link);
      });
      return;
    }
    const modern = isModernVersion(backendSession.protocolVersion);
    const owned = this.#listen?.owned.get(link.name) ?? [];
    // A modern backend is asked for its part of what the client wants: a listen's filter, or everything a GET stream hears.
    const filter = this.#listen === null ? everything(backendSession.capabilities, this.#session.subscriptionsOf(link.name)) : backendPart(this.#listen.spec.filter, backendSession.capabilities, owned);
    if ((modern || this.#listen !== null) && !asksAnything(filter)) return;
    if (!modern && owned.length > 0) this.#listen!.subscribe(link, owned, backendSession);
    const listen = modern ? towardModern(listenRequest(filter), this.ctx.envelope ?? this.#session.envelope, backendSession.protocolVersion) : undefined;
    let headers: string[] | GatewayError;
    try {
      headers = modern
        ? await link.headers(this.ctx, backendSession, 'application/json, text/event-stream', undefined, listen)
        : await link.headers(this.ctx, backendSession, 'text/event-stream', this.#positions.get(link.index));
    } catch (err) {
      // A prepareBackend hook threw: that backend's stream stays closed; the others go on.
      this.ctx.log(err instanceof GatewayError ? err : new GatewayError('internal_error', `no GET stream to backend "${link.name}"`, { detail: String(err) }), err);
      return;
    }
    if (this.#closed || !Array.isArray(headers) || this.#backends.has(link.index)) return;
    const stream = new BackendStream(this, link, backendSession);
    stream.opening = opening;
    this.#backends.set(link.index, stream);
    if (listen === undefined) stream.dispatch(link.streams, 'GET', headers, null);
    else stream.dispatch(link.streams, 'POST', [...headers, 'content-type', 'application/json'], Buffer.from(JSON.stringify(listen)));
  }

  backendEvent(link: BackendLink, stream: BackendStream, event: SseEvent): void {
    if (this.#closed) return;
    this.#retries.delete(link.index);
    // Refusals count until a stream has stayed up a while: an event alone does not prove the
    // backend keeps its sessions (one that drops every new one would have us rejoin forever).
    if (performance.now() - stream.openedAt >= STABLE_MS) this.#lostRefusals.delete(link.index);
    const resumable = isResumableEventId(event.id);
    if (resumable) this.#positions.set(link.index, event.id!);
    const message = eventMessage(event);
    if (message !== null) this.#observe(this.#session, message);
    if (message !== null && this.#gated(message)) return;
    if (this.#listen !== null) {
      // A legacy backend's request: never on a subscription (2026-07-28), but maybe for a call of the session.
      if (message !== null && 'method' in message && 'id' in message && !isModernVersion(stream.record.protocolVersion)) {
        this.#listen.request(link, stream.record, message as JsonRpcRequest);
        return;
      }
      // A subscription carries only what its filter asks for, each tagged with its id.
      if (message !== null && wanted(this.#listen.spec.filter, message)) {
        this.ctx.res.write(formatSseEvent({ event: 'message', data: JSON.stringify(tagged(message, this.#listen.spec.subscriptionId)) }));
      }
      return;
    }
    // A modern backend's own acknowledgement of the gateway's listen is nobody else's business.
    if (message !== null && 'method' in message && message.method === 'notifications/subscriptions/acknowledged') return;
    const id = resumable ? multiplexEventId(this.#positions) : null;
    // No request is answered on this stream: a response on it is dropped.
    const text = eventTowardClient(event, id, link.index, null, message);
    if (text.length > 0) this.ctx.res.write(text);
  }

  /** A list_changed the gate holds (plugin views): written only if the list changed for this client. */
  #gated(message: JsonRpcMessage): boolean {
    return this.#gate !== null && this.#gate.holds(this.ctx, this.#session, message, this.#listen?.spec ?? null, (text) => this.#closed || this.ctx.res.write(text));
  }

  /** A notification of the gateway's own to the client of a legacy GET stream, as it is. */
  tell(message: JsonRpcMessage): void {
    if (!this.#closed) this.ctx.res.write(formatSseEvent({ event: 'message', data: JSON.stringify(message) }));
  }

  /** A message a backend sent on a request's stream that is not that request's (fan-out calls). */
  deliver(backendIndex: number, message: JsonRpcMessage): void {
    if (this.#closed || this.#gated(message)) return;
    const rewritten = towardClient(backendIndex, message, null);
    if (rewritten !== null) this.ctx.res.write(formatSseEvent({ event: 'message', data: JSON.stringify(rewritten) }));
  }

  /** A backend joined the session (again): its stream opens on the new backend session. */
  backendJoined(name: string): void {
    const link = this.#links.get(name);
    if (link === undefined || this.#closed) return;
    this.#backends.get(link.index)?.cancel();
    this.#backends.delete(link.index);
    this.#positions.delete(link.index); // positions of the old session mean nothing to the new one
    this.#retries.delete(link.index);
    void this.#connect(link);
  }

  /**
   * A backend stream ended. `refusal` is the HTTP status when the backend refused the stream:
   * 405 (it has no GET stream) is final; 404 means it lost the session, and so does a 400/410
   * once the backend, asked, no longer knows it: the backend joins again and its stream reopens
   * then. Anything else is retried with backoff.
   */
  backendEnded(link: BackendLink, stream: BackendStream, refusal: StreamRefusal | null): void {
    if (this.#backends.get(link.index) !== stream) return; // replaced meanwhile
    this.#backends.delete(link.index);
    if (this.#closed || refusal?.status === 405) return;
    // A modern backend that refuses the listen (it serves no subscriptions) is not asked again,
    // nor a backend that refuses a second stream on one session (409: another listen has it).
    if (refusal !== null && refusal.status >= 400 && refusal.status < 500 && (isModernVersion(stream.record.protocolVersion) || refusal.status === 409)) {
      if (refusal.status === 409) this.ctx.log(new GatewayError('backend_error', `backend "${link.name}" takes one stream per session: another stream of this session has it`, { extra: { backend: link.name } }));
      return;
    }
    if (refusal?.session === 'lost') this.#sessionLost(link, stream.record);
    else if (refusal?.session === 'unsure') {
      this.#healing.stillKnown(this.ctx, link, stream.record).then(
        (known) => (known ? this.#retryLater(link) : this.#sessionLost(link, stream.record)),
        () => this.#retryLater(link),
      );
    } else this.#retryLater(link);
  }

  /** The backend lost the session this backend's stream was on: it joins again, and the stream reopens on the new one. */
  #sessionLost(link: BackendLink, record: BackendSessionRecord): void {
    if (this.#closed || this.#backends.has(link.index)) return;
    const refusals = (this.#lostRefusals.get(link.index) ?? 0) + 1;
    this.#lostRefusals.set(link.index, refusals);
    // A backend that refuses even a session it just opened would have us open sessions forever.
    if (refusals > MAX_LOST_REFUSALS) {
      this.ctx.log(new GatewayError('backend_error', `backend "${link.name}" refuses the GET stream of every new session: its stream is given up`, { extra: { backend: link.name } }));
      return;
    }
    this.#session.markLost(link.name, record);
    // The first refusal rejoins at once (a restart heals fast); the next ones wait, doubling.
    if (refusals === 1) void this.#connect(link);
    else setTimeout(() => void this.#connect(link), RETRY_MIN_MS * 4 * 2 ** (refusals - 2)).unref();
  }

  #retryLater(link: BackendLink): void {
    if (this.#closed) return;
    const attempt = (this.#retries.get(link.index) ?? 0) + 1;
    this.#retries.set(link.index, attempt);
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (attempt - 1));
    setTimeout(() => void this.#connect(link), delay).unref();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#openings.settleAll();
    for (const stream of this.#backends.values()) stream.cancel();
    this.#backends.clear();
    if (this.#listen !== null && !this.ctx.res.writableEnded && !this.ctx.res.destroyed) {
      // The gateway ends a subscription (shutdown): its response says it ended gracefully.
      const id = this.#listen.spec.subscriptionId;
      this.ctx.res.write(formatSseEvent({ event: 'message', data: JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [META.subscriptionId]: id } } }) }));
    }
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
    this.#streams.delete(this);
    if (this.#session.stream === this) this.#session.stream = null;
    if (this.#listen !== null) {
      this.#session.removeListen(this);
      this.#listen.ended();
    }
  }
}
