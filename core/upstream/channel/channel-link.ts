/**
 * One open channel to a channel backend (a child process, an SSE connection) and the MCP session
 * it is: the handshake the link makes itself (initialize with the parameters of the session that
 * opened it, then notifications/initialized), and the traffic of the sessions it serves.
 *
 * Ids: every request sent gets an id of the link's own (an integer), and its progress token one
 * too, so that sessions sharing a child, and requests that reuse an id, never meet; answers and
 * progress go back under the ids the client chose. Requests the backend sends (sampling,
 * elicitation, roots) keep the backend's ids; the answer is taken only from the session asked.
 *
 * Where a backend's message goes: a response to its request's answer; progress to the request
 * whose token it names; anything else to the one call under way when there is exactly one (stdio
 * carries no stream of its own to say which call a message is about), else to the session's GET
 * stream (the owner decides: `unrelated`).
 */
import { performance } from 'node:perf_hooks';
import type { JsonRpcId, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import type { UpstreamError } from '../upstream-error.ts';
import type { ChannelAnswer } from './channel-answer.ts';
import { ChannelClosed, type ChannelEvents, type ChannelOpener, type MessageChannel } from './channel.ts';

/** A session of the backend as the gateway sees it (channel-transport.ts): its link may end and be made again. */
export interface LinkSession {
  readonly id: string;
  /** The params of its initialize, sent again when a new link is made for it. */
  readonly params: unknown;
  /** Its GET stream, when open. */
  stream: ChannelAnswer | null;
}

export interface LinkOwner {
  /**
   * A message of the backend about no call in particular (or about one of several): where it goes
   * is the owner's to say; a request only to a session `mayAsk` allows. Returns the session asked.
   */
  unrelated(link: ChannelLink, message: JsonRpcMessage, text: string, mayAsk: (session: LinkSession) => boolean): LinkSession | null;
  /**
   * The link ended (`ready`: after its handshake succeeded, or ended by the gateway, or refused by
   * the backend for the session's own params: no failure to back off from).
   */
  linkClosed(link: ChannelLink, error: ChannelClosed, ready: boolean): void;
}

interface Pending {
  readonly answer: ChannelAnswer;
  readonly session: LinkSession;
  readonly clientId: JsonRpcId;
  /** The client's progress token, when it gave one (the backend sees the link's). */
  readonly token: string | number | undefined;
}

/** The link's own handshake id: no request of a session ever gets 0. */
const HANDSHAKE_ID = 0;
/** Messages held while the handshake is under way. */
const MAX_QUEUED = 1024;
/** The backend's requests waiting for clients' answers at most; past it a new one is answered with an error at once. */
const MAX_ASKED = 1024;
/** Of those, what one session may hold: a client that never answers does not keep the others of a shared child from being asked. */
const MAX_ASKED_PER_SESSION = 64;

function key(id: JsonRpcId): string {
  return typeof id === 'number' ? `n${id}` : `s${id}`;
}

export class ChannelLink implements ChannelEvents {
  readonly #channel: MessageChannel;
  readonly #owner: LinkOwner;
  readonly #headers: readonly string[];
  state: 'starting' | 'ready' | 'closed' = 'starting';
  /** The result of the backend's initialize, answered to every session's initialize. */
  initResult: unknown = null;
  /** Sessions it serves (one, unless the backend is shared). */
  readonly sessions = new Set<LinkSession>();
  /** performance.now() by which the handshake must be done. */
  readonly startBy: number;
  /** performance.now() since which no request was under way. */
  idleSince = performance.now();
  #queued: string[] | null = [];
  #ready: Array<(error: UpstreamError | null) => void> = [];
  readonly #pending = new Map<number, Pending>();
  /** Link token → link id of the request that gave it. */
  readonly #tokens = new Map<string, number>();
  /** The backend's requests waiting for a client's answer: by key of its id, the session asked and the id. */
  readonly #asked = new Map<string, { readonly session: LinkSession; readonly id: string | number }>();
  /** How many of `#asked` each session holds. */
  readonly #askedOf = new Map<LinkSession, number>();
  #nextId = 1;
  /** The gateway ended it (idle, room, the session's end, shutdown): not a failure of the backend's. */
  #endedByGateway = false;
  /** The backend answered initialize with an error: it runs, and refused these params (a client's: another's may do). */
  #refused = false;

  constructor(opener: ChannelOpener, owner: LinkOwner, params: unknown, headers: readonly string[], startupTimeoutMs: number) {
    this.#owner = owner;
    this.#headers = headers;
    this.startBy = performance.now() + startupTimeoutMs;
    this.#channel = opener(this, headers);
    const handshake = { jsonrpc: '2.0', id: HANDSHAKE_ID, method: 'initialize', params };
    const refused = this.#channel.send(JSON.stringify(handshake), headers);
    if (refused !== null) queueMicrotask(() => this.closed(refused as ChannelClosed));
  }

  get busy(): boolean {
    return this.#pending.size > 0;
  }

  /** Calls `done` once the handshake is over (null) or failed (why). */
  whenReady(done: (error: UpstreamError | null) => void): void {
    if (this.state === 'ready') done(null);
    else this.#ready.push(done);
  }

  /** Sends a session's request; its response goes to `answer`. */
  request(session: LinkSession, message: JsonRpcRequest, answer: ChannelAnswer, headers: readonly string[]): void {
    // Failed already (an earlier request of its batch was refused): nothing would take its response.
    if (answer.ended) return;
    const id = this.#nextId++;
    let params = message.params;
    const meta = params?._meta as Record<string, unknown> | undefined;
    const token = meta?.progressToken as string | number | undefined;
    if (token !== undefined) {
      params = { ...params, _meta: { ...meta, progressToken: `p${id}` } };
      this.#tokens.set(`p${id}`, id);
    }
    this.#pending.set(id, { answer, session, clientId: message.id, token });
    this.#send(JSON.stringify({ jsonrpc: '2.0', id, method: message.method, params }), headers, answer);
  }

  /** Sends a session's notification or its answer to one of the backend's requests. */
  forward(session: LinkSession, message: JsonRpcMessage, headers: readonly string[]): void {
    if ('method' in message) {
      if (message.method === 'notifications/initialized') return; // the link sent its own
      if (message.method === 'notifications/cancelled') {
        const id = this.#linkIdOf(session, message.params?.requestId as JsonRpcId);
        if (id === null) return;
        this.#send(JSON.stringify({ ...message, params: { ...message.params, requestId: id } }), headers, null);
        return;
      }
      this.#send(JSON.stringify(message), headers, null);
      return;
    }
    // An answer to the backend's request: only from the session it asked.
    const asked = this.#asked.get(key(message.id));
    if (asked?.session !== session) return;
    this.#unask(key(message.id), session);
    this.#send(JSON.stringify(message), headers, null);
  }

  /** An answer ended with requests unanswered (its client went away, it failed): the backend is told they are cancelled. */
  abandon(answer: ChannelAnswer, reason: string): void {
    for (const [id, pending] of this.#pending) {
      if (pending.answer !== answer) continue;
      this.#forget(id, pending);
      if (this.state === 'ready') this.#send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } }), this.#headers, null);
    }
  }

  /**
   * A session ended: it no longer uses the link, and what the backend asked it and it did not
   * answer never will be (the backend is told, and the places those requests held are free).
   */
  leave(session: LinkSession): void {
    this.sessions.delete(session);
    for (const [k, asked] of this.#asked) {
      if (asked.session !== session) continue;
      this.#unask(k, session);
      this.#send(JSON.stringify({ jsonrpc: '2.0', id: asked.id, error: { code: -32603, message: 'the client session asked ended' } }), this.#headers, null);
    }
  }

  /**
   * Ends the link now (its calls under way fail with `reason`, its sessions are free to make a
   * new one at once), then the channel (the child's SIGTERM and grace period run on their own).
   */
  end(reason: string, failed = false): Promise<void> {
    this.#endedByGateway = !failed;
    this.closed(new ChannelClosed(reason));
    return this.#channel.close();
  }

  // ---- ChannelEvents ----

  message(message: JsonRpcMessage): void {
    if (this.state === 'closed') return;
    if (!('method' in message)) {
      this.#response(message);
      return;
    }
    if (message.method === 'notifications/progress') {
      // The link's tokens are strings: any other token is none of its calls' (and String() of
      // an object the backend made up, `{"toString":1}`, would throw).
      const token = message.params?.progressToken;
      const id = typeof token === 'string' ? this.#tokens.get(token) : undefined;
      const pending = id === undefined ? undefined : this.#pending.get(id);
      if (pending !== undefined) pending.answer.message(JSON.stringify({ ...message, params: { ...message.params, progressToken: pending.token } }), false);
      return;
    }
    const text = JSON.stringify(message);
    const isRequest = 'id' in message && message.id !== undefined;
    if (isRequest && this.#asked.size >= MAX_ASKED) return this.#refuseAsk(message.id!, `${MAX_ASKED} requests already wait for a client's answer`);
    const answer = this.#onlyAnswer();
    let session: LinkSession | null;
    if (answer !== null) {
      session = this.#sessionOf(answer);
      if (isRequest && session !== null && (this.#askedOf.get(session) ?? 0) >= MAX_ASKED_PER_SESSION) {
        return this.#refuseAsk(message.id!, `the client session has ${MAX_ASKED_PER_SESSION} requests it has not answered`);
      }
      answer.message(text, false);
    } else {
      session = this.#owner.unrelated(this, message, text, (s) => (this.#askedOf.get(s) ?? 0) < MAX_ASKED_PER_SESSION);
    }
    if (!isRequest) return;
    // Nobody can answer: the backend is told, so it does not wait.
    if (session === null) return this.#refuseAsk(message.id!, 'no client session can answer this request now');
    this.#asked.set(key(message.id!), { session, id: message.id! });
    this.#askedOf.set(session, (this.#askedOf.get(session) ?? 0) + 1);
  }

  closed(error: ChannelClosed): void {
    if (this.state === 'closed') return;
    const ready = this.state === 'ready' || this.#endedByGateway || this.#refused;
    this.state = 'closed';
    this.#queued = null;
    for (const done of this.#ready.splice(0)) done(error);
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#tokens.clear();
    // The backend's requests die with it: an answer to one would have nowhere to go.
    this.#asked.clear();
    this.#askedOf.clear();
    for (const p of pending) p.answer.fail(error);
    this.#owner.linkClosed(this, error, ready);
  }

  // ---- inside ----

  #response(message: JsonRpcResponse): void {
    if (message.id === HANDSHAKE_ID && this.state === 'starting') {
      this.#handshakeAnswered(message);
      return;
    }
    const id = typeof message.id === 'number' ? message.id : -1;
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#forget(id, pending);
    const final = --pending.answer.unanswered === 0;
    pending.answer.message(JSON.stringify({ ...message, id: pending.clientId }), final);
  }

  #handshakeAnswered(message: JsonRpcResponse): void {
    if (message.error !== undefined) {
      const reason = `refused initialize: ${String(message.error.message).slice(0, 200)}`;
      // Not a failure to start: backing off would let one client's initialize refuse every other session's.
      this.#refused = true;
      void this.#channel.close();
      this.closed(new ChannelClosed(reason));
      return;
    }
    this.initResult = message.result;
    this.state = 'ready';
    const queued = this.#queued ?? [];
    this.#queued = null;
    this.#channel.send('{"jsonrpc":"2.0","method":"notifications/initialized"}', this.#headers);
    for (const text of queued) this.#channel.send(text, this.#headers);
    for (const done of this.#ready.splice(0)) done(null);
  }

  #send(text: string, headers: readonly string[], answer: ChannelAnswer | null): void {
    if (this.#queued !== null) {
      if (this.#queued.length < MAX_QUEUED) this.#queued.push(text);
      else answer?.fail(new ChannelClosed(`has ${MAX_QUEUED} messages waiting for its start`));
      return;
    }
    const refused = this.#channel.send(text, headers);
    if (refused !== null && answer !== null) answer.fail(refused);
  }

  #refuseAsk(id: string | number, why: string): void {
    this.#send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: why } }), this.#headers, null);
  }

  #unask(k: string, session: LinkSession): void {
    this.#asked.delete(k);
    const held = (this.#askedOf.get(session) ?? 1) - 1;
    if (held === 0) this.#askedOf.delete(session);
    else this.#askedOf.set(session, held);
  }

  #forget(id: number, pending: Pending): void {
    this.#pending.delete(id);
    if (pending.token !== undefined) this.#tokens.delete(`p${id}`);
    if (this.#pending.size === 0) this.idleSince = performance.now();
  }

  #linkIdOf(session: LinkSession, clientId: JsonRpcId): number | null {
    for (const [id, pending] of this.#pending) if (pending.session === session && pending.clientId === clientId) return id;
    return null;
  }

  /** The answer of the one call under way, when there is exactly one. */
  #onlyAnswer(): ChannelAnswer | null {
    let only: ChannelAnswer | null = null;
    for (const pending of this.#pending.values()) {
      if (only !== null && pending.answer !== only) return null;
      only = pending.answer;
    }
    return only;
  }

  #sessionOf(answer: ChannelAnswer): LinkSession | null {
    for (const pending of this.#pending.values()) if (pending.answer === answer) return pending.session;
    return null;
  }
}
