/**
 * A channel backend (stdio, legacy HTTP+SSE) served to the gateway as a streamable-HTTP server
 * would serve it, in process: `initialize` makes a session (`Mcp-Session-Id`), a POST's requests
 * are answered with JSON or an event stream, GET opens the session's stream, DELETE ends it; an
 * unknown session is 404, a request without one 400. So every part of the gateway that speaks to
 * backends (aggregation, healing, the era bridge, transparent mode) speaks to these unchanged.
 *
 * Sessions and channels: a session is the gateway's; the channel behind it (a child process, an
 * SSE connection: channel-link.ts) is made when the session needs one and may end without the
 * session ending: after `idleTimeout` without a request, when the child exits or the stream
 * closes (its calls under way fail, naming the backend and why). The session's next request
 * makes a new one, initialized with the session's own parameters, so the client's session heals
 * as it does over a backend's restart. With `shared`, one channel serves every session.
 *
 * Bounds: `maxChannels` channels (a new one ends the longest-idle one without calls, else is
 * refused), 10,000 sessions (the longest unused is forgotten: 404, and the gateway initializes
 * again), `startupTimeout` for a channel's handshake, a backoff (1 s doubling to 30 s) after a
 * channel that failed to start, and every answer bounded as an HTTP backend's (channel-answer.ts).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import type { Logger } from 'pino';
import type { BackendInfo } from '../../plugin-api/backend.ts';
import { GatewayError } from '../../base/errors.ts';
import { parseMessages, type JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import type { BackendTransport, Carrier, UpstreamHandler } from '../transport.ts';
import { UpstreamError } from '../upstream-error.ts';
import { PoolFullError } from '../pool.ts';
import { ChannelAnswer, type AnswerOwner } from './channel-answer.ts';
import { ChannelLink, type LinkOwner, type LinkSession } from './channel-link.ts';
import { resultFor, sessionParams, SHARED_PARAMS } from './session-params.ts';
import type { ChannelClosed, ChannelOpener } from './channel.ts';

export interface ChannelTransportOptions {
  readonly backend: BackendInfo;
  readonly opener: ChannelOpener;
  /** One channel for every session. */
  readonly shared: boolean;
  readonly maxChannels: number;
  readonly idleTimeoutMs: number;
  readonly startupTimeoutMs: number;
  /** How the channel limit is named in a refusal: `processes (spec.stdio.maxProcesses)`. */
  readonly limitName: string;
  readonly log?: Logger | null;
}

interface Session extends LinkSession {
  link: ChannelLink | null;
}

const MAX_SESSIONS = 10_000;
/** GET streams per backend at most, as for an HTTP backend's stream pool. */
const MAX_STREAMS = 256;
const MAX_BACKOFF_MS = 30_000;
/** Headers that belong to the streamable-HTTP exchange, not to the backend: never passed to a channel. */
const EXCHANGE_HEADERS = new Set(['accept', 'content-type', 'content-length', 'mcp-session-id', 'last-event-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'host']);
const NO_CARRIER: Carrier = { handler: null, abort() {}, resume() {} };

export class ChannelTransport implements BackendTransport, LinkOwner, AnswerOwner {
  readonly #o: ChannelTransportOptions;
  /** Sessions, least recently used first. */
  readonly #sessions = new Map<string, Session>();
  readonly #links = new Set<ChannelLink>();
  readonly #answers = new Set<ChannelAnswer>();
  /** The answer → the link its requests went to. */
  readonly #answerLinks = new Map<ChannelAnswer, ChannelLink>();
  #shared: ChannelLink | null = null;
  #failures = 0;
  #retryAt = 0;
  #lastFailure = '';
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  /** GET streams open. */
  #standing = 0;
  /** The session last moved to the end of `#sessions`. */
  #newest: Session | null = null;

  constructor(options: ChannelTransportOptions) {
    this.#o = options;
  }

  /** Channels open now (children running, streams held). */
  get channels(): number {
    return this.#links.size;
  }

  /** Sessions known now. */
  get sessions(): number {
    return this.#sessions.size;
  }

  dispatch(handler: UpstreamHandler, method: string, _path: string, headers: readonly string[], body: Buffer | null, timeoutMs: number, answerTimeoutMs = 0): void {
    try {
      if (this.#closed) return this.#refuse(handler, new UpstreamError('ECHANNEL_UNAVAILABLE', 'is shutting down'));
      const sessionId = headerOf(headers, 'mcp-session-id');
      const passed = backendHeaders(headers);
      if (method === 'POST') return this.#post(handler, sessionId, passed, body, timeoutMs, answerTimeoutMs);
      const session = sessionId === null ? undefined : this.#sessions.get(sessionId);
      if (session === undefined) return reply(handler, sessionId === null ? 400 : 404, sessionId === null ? 'a session id is required' : 'session not found');
      if (method === 'GET') return this.#stream(handler, session, timeoutMs);
      if (method === 'DELETE') {
        this.#end(session);
        return reply(handler, 200, null);
      }
      reply(handler, 405, `method ${method} is not allowed`);
    } catch (err) {
      this.#refuse(handler, new UpstreamError('ECHANNEL_BROKEN', `could not be sent the request (${(err as Error).message})`, err));
    }
  }

  cancel(_handler: UpstreamHandler): void {
    // Nothing waits in a queue here: an exchange under way is aborted through its carrier.
  }

  /** GET streams are bounded in number as an HTTP backend's are (upstreams.ts: 256), each holding what its client has not read, up to its bound. */
  refusal(): UpstreamError | null {
    return this.#standing >= MAX_STREAMS ? new PoolFullError(MAX_STREAMS) : null;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    for (const session of this.#sessions.values()) session.stream?.end();
    this.#sessions.clear();
    await Promise.all([...this.#links].map((link) => link.end('was ended: the gateway is stopping')));
  }

  // ---- POST ----

  #post(handler: UpstreamHandler, sessionId: string | null, headers: string[], body: Buffer | null, timeoutMs: number, answerTimeoutMs: number): void {
    let parsed: JsonRpcMessage | JsonRpcMessage[];
    try {
      parsed = parseMessages(body ?? Buffer.alloc(0));
    } catch (err) {
      return reply(handler, 400, (err as GatewayError).message, -32700);
    }
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    const init = messages.find((m) => 'method' in m && m.method === 'initialize');
    if (init !== undefined) {
      if (messages.length > 1 || sessionId !== null || !('id' in init)) return reply(handler, 400, 'initialize must be sent alone, with an id, and without a session id', -32600);
      const kept = sessionParams((init as { params?: unknown }).params);
      if ('problem' in kept) return reply(handler, 400, kept.problem, -32602);
      return this.#initialize(handler, init.id!, kept.params, headers, timeoutMs, answerTimeoutMs);
    }
    if (sessionId === null) return reply(handler, 400, 'a session id is required (initialize first)', -32600);
    const session = this.#sessions.get(sessionId);
    if (session === undefined) return reply(handler, 404, 'session not found', -32001);
    this.#touch(session);
    const requests = messages.filter((m) => 'method' in m && 'id' in m && m.id !== undefined).length;
    // Notifications and answers for a channel that has ended were for the process that is gone: no new one is started for them.
    const current = this.#o.shared ? this.#shared : session.link;
    if (requests === 0 && (current === null || current.state === 'closed')) return reply(handler, 202, null);
    const answer = requests === 0 ? null : this.#answer(handler, { standing: false, requests, sessionId: null, timeoutMs, answerTimeoutMs });
    const link = this.#linkFor(session, headers);
    if (link instanceof UpstreamError) return answer === null ? this.#refuse(handler, link) : answer.fail(link);
    if (answer !== null) this.#answerLinks.set(answer, link);
    for (const message of messages) {
      if ('method' in message && 'id' in message && message.id !== undefined) link.request(session, message, answer!, headers);
      else link.forward(session, message, headers);
    }
    if (answer === null) reply(handler, 202, null);
  }

  #initialize(handler: UpstreamHandler, clientId: string | number, params: Record<string, unknown>, headers: string[], timeoutMs: number, answerTimeoutMs: number): void {
    const session: Session = { id: randomUUID(), params, stream: null, link: null };
    const link = this.#linkFor(session, headers);
    if (link instanceof UpstreamError) return this.#refuse(handler, link);
    this.#remember(session);
    const answer = this.#answer(handler, { standing: false, requests: 1, sessionId: session.id, timeoutMs, answerTimeoutMs });
    link.whenReady((error) => {
      if (error === null) {
        const result = this.#o.shared ? resultFor(link.initResult, params.protocolVersion) : link.initResult;
        return answer.message(JSON.stringify({ jsonrpc: '2.0', id: clientId, result }), true);
      }
      // A session whose initialize failed is not kept (nor what its params hold): its client initializes again.
      this.#end(session);
      answer.fail(error);
    });
  }

  // ---- sessions and links ----

  /** The session's link, made (or made again) when it has none. */
  #linkFor(session: Session, headers: string[]): ChannelLink | UpstreamError {
    let link = this.#o.shared ? this.#shared : session.link;
    if (link === null || link.state === 'closed') {
      const made = this.#open(session, headers);
      if (made instanceof UpstreamError) return made;
      link = made;
      if (this.#o.shared) this.#shared = link;
    }
    session.link = link;
    link.sessions.add(session);
    return link;
  }

  #open(session: Session, headers: string[]): ChannelLink | UpstreamError {
    const now = performance.now();
    if (now < this.#retryAt) {
      return new UpstreamError('ECHANNEL_UNAVAILABLE', `${this.#lastFailure}; it is tried again in ${Math.ceil((this.#retryAt - now) / 1000)} s`);
    }
    if (this.#links.size >= this.#o.maxChannels && !this.#endIdlest()) {
      return new UpstreamError('ECHANNEL_UNAVAILABLE', `has all ${this.#o.maxChannels} ${this.#o.limitName} busy; try again later`);
    }
    const link = new ChannelLink(this.#o.opener, this, this.#o.shared ? SHARED_PARAMS : session.params, headers, this.#o.startupTimeoutMs);
    this.#links.add(link);
    this.#arm();
    return link;
  }

  /** Ends the link that has been idle longest, if one is: room for a new one. */
  #endIdlest(): boolean {
    let idlest: ChannelLink | null = null;
    for (const link of this.#links) if (!link.busy && link.state === 'ready' && (idlest === null || link.idleSince < idlest.idleSince)) idlest = link;
    if (idlest === null) return false;
    void idlest.end(`was ended to make room for another session (${this.#o.limitName})`);
    return true;
  }

  #remember(session: Session): void {
    this.#sessions.set(session.id, session);
    this.#newest = session;
    if (this.#sessions.size <= MAX_SESSIONS) return;
    const oldest = this.#sessions.values().next().value as Session;
    this.#end(oldest);
  }

  #touch(session: Session): void {
    // Map order is insertion order: moved to the end, the session is the most recently used
    // (most requests are the same session's as the one before: nothing to move).
    if (session === this.#newest) return;
    this.#newest = session;
    this.#sessions.delete(session.id);
    this.#sessions.set(session.id, session);
  }

  #end(session: Session): void {
    this.#sessions.delete(session.id);
    if (this.#newest === session) this.#newest = null;
    session.stream?.end();
    session.stream = null;
    const link = session.link;
    session.link = null;
    if (link === null) return;
    link.leave(session);
    if (link.sessions.size === 0 && !this.#o.shared) void link.end('was ended: its session ended');
  }

  #stream(handler: UpstreamHandler, session: Session, timeoutMs: number): void {
    if (session.stream !== null && !session.stream.ended) return reply(handler, 409, 'the session already has a GET stream');
    const full = this.refusal();
    if (full !== null) return this.#refuse(handler, full);
    this.#touch(session);
    this.#standing++;
    session.stream = this.#answer(handler, { standing: true, requests: 0, sessionId: null, timeoutMs, answerTimeoutMs: 0 });
  }

  #answer(handler: UpstreamHandler, options: ConstructorParameters<typeof ChannelAnswer>[3]): ChannelAnswer {
    const answer = new ChannelAnswer(handler, this.#o.backend, this, options);
    if (!answer.standing) {
      this.#answers.add(answer);
      this.#arm();
    }
    return answer;
  }

  #refuse(handler: UpstreamHandler, error: UpstreamError): void {
    handler.attach(NO_CARRIER);
    handler.onError(error);
  }

  // ---- LinkOwner, AnswerOwner ----

  unrelated(link: ChannelLink, message: JsonRpcMessage, text: string, mayAsk: (session: LinkSession) => boolean): LinkSession | null {
    const isRequest = 'id' in message && message.id !== undefined;
    // A shared child's request with no single call under way may be about any session's work (a
    // prompt to sample, a form to fill): no session is asked, neither sees another's nor answers for it.
    if (isRequest && link.sessions.size > 1) return null;
    let target: LinkSession | null = null;
    for (const session of link.sessions) {
      if (session.stream === null || session.stream.ended) continue;
      // A request goes to one session; a notification to every session's stream (one, unless shared).
      if (isRequest && target !== null) return null;
      target = session;
      if (!isRequest) session.stream.message(text, false);
    }
    if (isRequest && target !== null) {
      if (!mayAsk(target)) return null;
      target.stream!.message(text, false);
    }
    return target;
  }

  linkClosed(link: ChannelLink, error: ChannelClosed, ready: boolean): void {
    this.#links.delete(link);
    if (this.#shared === link) this.#shared = null;
    for (const session of link.sessions as Set<Session>) if (session.link === link) session.link = null;
    if (ready) {
      this.#failures = 0;
      return;
    }
    this.#failures++;
    this.#lastFailure = error.message;
    this.#retryAt = performance.now() + Math.min(1000 * 2 ** (this.#failures - 1), MAX_BACKOFF_MS);
    this.#o.log?.warn({ backend: this.#o.backend.name, reason: error.message }, `backend "${this.#o.backend.name}" ${error.message}`);
  }

  answerEnded(answer: ChannelAnswer, abandoned: boolean): void {
    if (answer.standing) {
      this.#standing--;
      return;
    }
    this.#answers.delete(answer);
    const link = this.#answerLinks.get(answer);
    this.#answerLinks.delete(answer);
    // However it ended (its client left, its deadline passed, it grew too large, a send was
    // refused), what it still waits for is forgotten and cancelled at the backend: left pending,
    // it would keep the channel busy (never idle), and take the next call's messages.
    link?.abandon(answer, abandoned ? 'the client went away' : 'the gateway gave up on it');
  }

  // ---- deadlines: one timer, running while there is something to watch ----

  #arm(): void {
    if (this.#timer !== null || this.#closed) return;
    this.#timer = setInterval(() => this.#sweep(), 250);
    this.#timer.unref();
  }

  #sweep(): void {
    const now = performance.now();
    for (const answer of this.#answers) {
      if (answer.answerBy !== 0 && now > answer.answerBy) answer.fail(new UpstreamError('EANSWER_TIMEOUT', 'answer timeout'));
      else if (answer.headBy !== 0 && now > answer.headBy) answer.keepAlive();
    }
    for (const link of this.#links) {
      if (link.state === 'starting' && now > link.startBy) {
        void link.end(`did not answer initialize within ${inWords(this.#o.startupTimeoutMs)} (startupTimeout)`, true);
      } else if (link.state === 'ready' && !link.busy && now - link.idleSince > this.#o.idleTimeoutMs) {
        void link.end('was ended after idleTimeout without a request');
      }
    }
    if (this.#answers.size === 0 && this.#links.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }
}

/** A duration as a message says it: `800 ms`, `60 s`. */
function inWords(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}

/** A header's value in a [name, value, ...] list (names as the gateway writes them: lower case). */
function headerOf(headers: readonly string[], name: string): string | null {
  for (let i = 0; i < headers.length; i += 2) if (headers[i]!.toLowerCase() === name) return headers[i + 1]!;
  return null;
}

/** The headers a channel may send along (credentials, Via, passthrough): none of the exchange's own. */
function backendHeaders(headers: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (!EXCHANGE_HEADERS.has(headers[i]!.toLowerCase())) kept.push(headers[i]!, headers[i + 1]!);
  return kept;
}

/** An answer the transport gives at once, as a streamable-HTTP server would: a status and a JSON-RPC error (or nothing). */
function reply(handler: UpstreamHandler, status: number, message: string | null, code = -32600): void {
  handler.attach(NO_CARRIER);
  if (message === null) {
    handler.onHeaders(status, []);
    handler.onComplete();
    return;
  }
  handler.onHeaders(status, ['content-type', 'application/json']);
  handler.onData(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } })));
  handler.onComplete();
}
