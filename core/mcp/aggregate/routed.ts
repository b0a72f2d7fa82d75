/**
 * A client request routed to one backend of an aggregated session (tools/call, prompts/get,
 * resources/read, ...): the backend's answer goes back to the client as the answer of the
 * gateway, which is the MCP server here. So the client gets the gateway's status and headers,
 * never the backend's (a redirect, a cookie, a 101 or a 204 of a backend go nowhere), and only
 * what is this request's:
 *
 *  - JSON (200): read whole (up to the backend's maxResponseBytes, 32 MiB unless
 *    `operational.maxBackendResponseSize` says otherwise), and it must be one JSON-RPC response
 *    to this request's id; it goes out as the gateway read it (written anew, so a key sent twice
 *    cannot show the client something the hooks did not see).
 *  - SSE (200): event by event (toward-client.ts), its events summed bounded as a JSON answer is
 *    (a tool call may stream as long as its client waits, but not without end): event ids name
 *    the backend (so a resumption
 *    finds it) and carry a sealed ticket naming this request (so a resumption through any replica
 *    may deliver its response, once: resume-tickets.ts), the backend's requests get ids that name
 *    it, and a response passes only if it answers this request.
 *  - Anything else (a 4xx/5xx, another 2xx or 3xx, an encoded body the gateway did not ask for,
 *    another media type): a JSON-RPC error of this request (HTTP 200) naming the backend —
 *    unless the backend lost the session (a 404; a 400/410 without a result once the backend,
 *    asked, does not know the session: backend-link.ts, sessionVerdict), then the request is
 *    handed back to be sent again on a new one (`lost`).
 *  - onResponse hooks of the method see every response the client gets here, the gateway's own
 *    errors included (JSON read whole, SSE through hooked-events.ts), after ids are rewritten.
 */
import { Buffer } from 'node:buffer';
import type { Context } from '../../plugin-api/context.ts';
import { errorBody, GatewayError, rpcErrorResponse } from '../../base/errors.ts';
import { pushCorsHeaders } from '../../http/cors.ts';
import type { ResponseHook } from '../../plugin-api/plugin.ts';
import { runResponseHooks } from '../../server/chain.ts';
import { isPromise } from '../../base/thenable.ts';
import { writeToClient } from '../../upstream/exchange.ts';
import type { AnswerHead } from '../../upstream/answer-reader.ts';
import { MessageExchange } from '../../upstream/message-exchange.ts';
import { HookedEvents, type HookedEventsHost } from '../hooked-events.ts';
import { idJson, messageProblem, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import { completeResultBytes, isPlainResult } from '../../protocol/answer-bytes.ts';
import { formatSseEvent, type SseEvent } from '../../protocol/sse.ts';
import type { OpenStream, OpenStreams } from '../streams.ts';
import { sessionVerdict, type BackendLink } from './backend-link.ts';
import { isResumableEventId, routedEventId } from './ids.ts';
import type { Ticket } from './resume-tickets.ts';
import type { AggregatedSession, AskableCall } from './session.ts';
import type { BackendSessionRecord } from './session-store.ts';
import { isModernVersion, logWanted } from '../../protocol/era.ts';
import { isInputRequired } from './input-relay.ts';
import { completed, completeOwned, privately } from './modern-answers.ts';
import type { RouteListener } from './route-listener.ts';
import { eventMessage, eventTowardClient, towardClient, type Answering } from './toward-client.ts';

/** Events held for a parked call before it is cut off. */
const MAX_HELD_EVENTS = 1024;
const EMPTY = Buffer.alloc(0);

type Mode = 'json' | 'sse' | 'refused';

export class RoutedExchange extends MessageExchange implements HookedEventsHost, OpenStream, AskableCall {
  /** The client's request this answers: the retry's, once a parked call resumes. */
  ctx: Context;
  readonly link: BackendLink;
  readonly session: AggregatedSession;
  /** The backend session the request was sent on. */
  readonly backendSession: BackendSessionRecord;
  /** The request's bytes as sent (POST), to send again on a new session. */
  readonly body: Buffer | null;
  /** Whether a lost session hands the request back (once per request) or is answered as an error. */
  readonly mayRetry: boolean;
  /** A resumed stream (GET with Last-Event-ID) is ended at once on shutdown, as a GET stream is. */
  readonly standalone: boolean;
  readonly #listener: RouteListener<RoutedExchange>;
  readonly #streams: OpenStreams;
  readonly #hooks: readonly ResponseHook[] | null;
  /** The request created a task: the backend's answer names it, and tasks/* follow it there. */
  readonly #createsTask: boolean;
  #mode: Mode = 'json';
  #status = 0;
  #events: HookedEvents | null = null;
  /** The client's answer is written (or being written): nothing more goes to it. */
  #answered = false;
  /** The backend asked for input the client must give: the listener took the call over. */
  #handedOver = false;
  /** The id the backend answers (the first request's, whoever's retry it is answered to). */
  readonly #backendId: JsonRpcId;
  /**
   * Parked (a modern client must answer the backend's request, then retry): the events the
   * backend sends meanwhile, replayed into the retry's answer; null while not parked.
   */
  #held: SseEvent[] | null = null;
  /** The backend's stream (or JSON answer) ended while the call was parked. */
  #endedParked = false;
  /** The JSON answer that came while the call was parked. */
  #parkedBody: Buffer | null = null;
  /** A retry resumed the call: its answer goes to the retry as an event stream (opened at the resumption). */
  #resumed = false;
  /** Requests for input that came on the backend session's own stream while the call was parked: asked next. */
  #asks: JsonRpcRequest[] | null = null;
  /** Keys of the backend's requests already asked of the client (input_required keys stay unique). */
  #asked = 0;
  /** Which responses this exchange carries: its request's; none on a resumed stream, whose response passes by its ticket. */
  readonly #answering: Answering;
  /**
   * The ticket in this answer's event ids (resume-tickets.ts): the request a stream resumed from
   * them may answer. Issued with the first event id the client gets (undefined until then; null
   * for none: a modern client, who resumes nothing, or an id too long to carry). A resumed stream
   * has the one it was resumed with (null when that was not genuine: no response passes).
   */
  #ticket: Ticket | null | undefined;
  /** A resumed stream's response is waiting for its claim among the replicas: the events after it, held meanwhile. */
  #claiming: SseEvent[] | null = null;
  /** The backend's stream ended while the claim was pending. */
  #endedClaiming = false;

  constructor(
    ctx: Context,
    link: BackendLink,
    session: AggregatedSession,
    backend: BackendSessionRecord,
    listener: RouteListener<RoutedExchange>,
    streams: OpenStreams,
    hooks: readonly ResponseHook[] | null,
    createsTask: boolean,
    body: Buffer | null,
    mayRetry: boolean,
    /** A resumed stream (`body` null): the ticket of the Last-Event-ID it resumes from, if genuine. */
    resumes: Ticket | null = null,
  ) {
    super(link.backend, link.metrics);
    this.ctx = ctx;
    this.link = link;
    this.session = session;
    this.backendSession = backend;
    this.body = body;
    this.mayRetry = mayRetry;
    this.standalone = body === null;
    this.#listener = listener;
    this.#streams = streams;
    this.#hooks = hooks;
    this.#createsTask = createsTask;
    this.#backendId = ctx.rpcId;
    this.#answering = body !== null ? ctx.rpcId : null;
    this.#ticket = body !== null ? undefined : resumes;
    ctx.inflight = this;
  }

  protected answered(head: AnswerHead, streamed: boolean): boolean {
    this.#status = head.status;
    if (head.status !== 200) {
      this.#mode = 'refused';
      return true;
    }
    if (head.encoding !== null) return this.#reject(`sent a body encoded as ${JSON.stringify(head.encoding.slice(0, 32))}, which the gateway did not ask for`);
    if (streamed) {
      this.#mode = 'sse';
      if (this.#hooks !== null) this.#events = new HookedEvents(this.ctx, this.#hooks, this, (event, response) => this.#render(event, response), this.#backendId);
      const list = ['content-type', 'text/event-stream', 'cache-control', 'no-cache, no-transform', 'x-accel-buffering', 'no', 'x-request-id', this.ctx.requestId];
      // A modern client has no session (the implicit one is the gateway's own business).
      if (this.ctx.envelope === null) list.push('mcp-session-id', this.session.id);
      pushCorsHeaders(list, this.ctx.corsOrigin);
      this.ctx.res.writeHead(200, list);
      this.ctx.res.flushHeaders();
      this.#streams.add(this);
      return true;
    }
    if (head.kind !== 'json') return this.#reject(`answered with ${head.mediaType === '' ? 'no media type' : JSON.stringify(head.mediaType.slice(0, 64))}, not JSON or an event stream`);
    return true;
  }

  /** The answer cannot be used: the backend exchange stops, the client gets a JSON-RPC error. */
  #reject(why: string): false {
    this.cancel();
    this.#answerError(new GatewayError('backend_error', `backend "${this.link.name}" ${why}`, { extra: { backend: this.link.name } }), null);
    return false;
  }

  protected events(events: readonly SseEvent[]): boolean {
    // A refusal that came as an event stream (a 2xx other than 200) is read for nothing.
    if (this.#mode !== 'sse') return true;
    if (this.#held !== null) return this.#holdEvents(events);
    if (this.#events !== null) return this.#events.push(events);
    let out = '';
    for (const event of events) out += this.#render(event, null);
    return this.write(out);
  }

  protected streamEnded(): void {
    if (this.#mode !== 'sse') {
      this.#refused(EMPTY);
      return;
    }
    if (this.#held !== null) {
      this.#endedParked = true;
      return;
    }
    if (this.#claiming !== null) {
      this.#endedClaiming = true;
      return;
    }
    if (this.#events !== null) this.#events.end();
    else this.finish();
  }

  protected bodyRead(body: Buffer): void {
    if (this.#mode === 'refused') {
      this.#refused(body);
      return;
    }
    // Parked on a request that came on the backend session's stream: the answer waits for the retry.
    if (this.#held !== null) {
      this.#parkedBody = body;
      this.#endedParked = true;
      return;
    }
    this.#json(body);
  }

  /** The whole JSON answer is here: it must be this request's response (or say the session is lost). */
  #json(body: Buffer): void {
    this.#parkedBody = null;
    const id = this.#passesAsBytes() && !this.#resumed ? idJson(this.ctx.rpcId) : null;
    if (id !== null) {
      const passed = this.ctx.envelope === null ? (isPlainResult(body, id) ? body : null) : completeResultBytes(body, id);
      if (passed !== null) {
        this.#answered = true;
        this.#done(null);
        this.#writeBody(passed);
        return;
      }
    }
    const text = body.toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (value === undefined || messageProblem(value) !== null || 'method' in (value as JsonRpcMessage)) {
      this.#answerError(new GatewayError('backend_error', `backend "${this.link.name}" answered with something other than a JSON-RPC response`, { detail: text.slice(0, 200), extra: { backend: this.link.name } }), null);
      return;
    }
    const response = value as JsonRpcResponse;
    if (!this.#handedBack(response, () => this.#jsonAnswer(response))) this.#jsonAnswer(response);
  }

  /** The JSON answer is this request's response (or not): the client gets it. */
  #jsonAnswer(answer: JsonRpcResponse): void {
    let response = answer;
    if (response.id !== this.#backendId) {
      this.#answerError(new GatewayError('backend_error', `backend "${this.link.name}" answered a request other than this one`, { detail: `id ${JSON.stringify(response.id)}`.slice(0, 200), extra: { backend: this.link.name } }), null);
      return;
    }
    if (this.#handsOver(response)) return;
    this.#noteTask(response);
    this.#done(null);
    // Resumed: the answer is the retry's, under its id.
    if (this.#resumed) response = { ...response, id: this.ctx.rpcId };
    this.#respond(response);
  }

  /** Whether `response` asks a legacy client for input on a modern backend's behalf; then the listener goes on with it. */
  #handsOver(response: JsonRpcResponse): boolean {
    if (this.ctx.envelope !== null || !isModernVersion(this.backendSession.protocolVersion) || !isInputRequired(response)) return false;
    this.#answered = true;
    this.#handedOver = true;
    this.#done(null);
    this.#listener.inputRequired(this, response);
    return true;
  }

  /** A task-creating call's answer names the task: tasks/get, tasks/result and tasks/cancel go to this backend. */
  #noteTask(response: JsonRpcResponse): void {
    if (!this.#createsTask) return;
    const taskId = (response.result as { task?: { taskId?: unknown } } | undefined)?.task?.taskId;
    if (typeof taskId === 'string') this.session.noteTask(taskId, this.link.index);
  }

  /** The backend refused the request: lost session, or a JSON-RPC error for the client. */
  #refused(body: Buffer): void {
    const text = body.toString('utf8');
    let response: JsonRpcResponse | null = null;
    try {
      const value = JSON.parse(text) as unknown;
      if (messageProblem(value) === null && !('method' in (value as JsonRpcMessage))) response = value as JsonRpcResponse;
    } catch {
      response = null;
    }
    if (!this.#handedBack(response, () => this.#refusal(response, text))) this.#refusal(response, text);
  }

  /** The backend's refusal as the client's JSON-RPC error. */
  #refusal(response: JsonRpcResponse | null, text: string): void {
    const link = this.link;
    const status = this.#status;
    const said = response?.error?.message;
    const why = status >= 400 ? 'refused the request' : 'answered without a response';
    const error = new GatewayError('backend_error', `backend "${link.name}" ${why} (HTTP ${status})${typeof said === 'string' ? `: ${said}` : ''}`, {
      status: 502,
      rpcCode: typeof response?.error?.code === 'number' ? response.error.code : undefined,
      detail: text.slice(0, 200),
      extra: { backend: link.name, status },
    });
    // Only a server failure with no JSON-RPC answer says something about the backend's health.
    this.#answerError(error, status >= 500 && response === null ? error : null);
  }

  /**
   * Whether the request is handed back to be sent again on a new backend session: at once when
   * the answer says the backend lost the session (404), after asking the backend when it may have
   * (a 400/410 without a result: `answer` runs when the backend still knows the session after all).
   */
  #handedBack(response: JsonRpcResponse | null, answer: () => void): boolean {
    if (!this.mayRetry || this.backendSession.sessionId === null) return false;
    const verdict = sessionVerdict(this.#status, response);
    if (verdict === 'kept') return false;
    if (verdict === 'lost') {
      this.#settle();
      this.#listener.lost(this);
      return true;
    }
    this.#listener.stillKnown(this).then(
      (known) => {
        if (known) answer();
        else {
          this.#settle();
          this.#listener.lost(this);
        }
      },
      () => answer(),
    );
    return true;
  }

  // ---- the client's answer ----

  /** A response for the client, through the method's hooks when it has any, then out as JSON. */
  #respond(response: JsonRpcResponse): void {
    this.#answered = true;
    if (this.#hooks === null) return this.#writeJson(response);
    let hooked: JsonRpcResponse | Promise<JsonRpcResponse>;
    try {
      hooked = runResponseHooks(this.#hooks, this.ctx, response);
    } catch (err) {
      return this.#hookError(err);
    }
    if (!isPromise(hooked)) return this.#writeJson(hooked);
    hooked.then((settled) => this.#writeJson(settled)).catch((err: unknown) => this.#hookError(err));
  }

  /**
   * Whether a JSON answer may reach the client as the backend's bytes (modern: `resultType` added,
   * completeResultBytes; legacy: as sent, isPlainResult) when no hook is to see it, no task to be
   * noted: only a plain `{"jsonrpc","id","result"}` of this id, each key once, no `resultType` in
   * its result; anything else (and a modern client's, made private, with views) is written anew.
   */
  #passesAsBytes(): boolean {
    return this.#hooks === null && !this.#createsTask && this.ctx.rpcId !== null && (this.ctx.envelope === null || !this.#listener.perCaller);
  }

  #writeJson(response: JsonRpcResponse): void {
    // Written from what the hooks passed (or what was read), never the backend's bytes.
    // A response no hook touched is the one this exchange parsed: it is completed in place.
    let shaped = this.ctx.envelope === null ? response : this.#hooks === null ? completeOwned(response) : completed(response);
    if (this.ctx.envelope !== null && this.#listener.perCaller) shaped = privately(shaped);
    if (this.#resumed) {
      // The retry's answer is an event stream already (resumeWith): the response is its last event.
      if (!this.ctx.res.writableEnded) this.ctx.res.end(formatSseEvent({ event: 'message', data: JSON.stringify(shaped) }));
      return;
    }
    this.#writeBody(Buffer.from(JSON.stringify(shaped)));
  }

  /** The client's answer: the gateway's status and headers, this body. */
  #writeBody(body: Buffer): void {
    const res = this.ctx.res;
    if (res.headersSent || res.destroyed) return;
    const headers = this.ctx.envelope !== null ? ['content-type', 'application/json', 'content-length', String(body.length)] : ['content-type', 'application/json', 'content-length', String(body.length), 'mcp-session-id', this.session.id]; // a modern client gets no session header
    pushCorsHeaders(headers, this.ctx.corsOrigin);
    headers.push('x-request-id', this.ctx.requestId); // last, differing every time: the lines before it are the last answer's (head-memo.ts)
    res.writeHead(200, headers);
    res.end(body);
  }

  /** A hook threw (or its result could not be written): the client gets the gateway's error, without hooks. */
  #hookError(err: unknown): void {
    const error = err instanceof GatewayError ? err : new GatewayError('internal_error', 'a response hook failed', { detail: String(err), cause: err });
    this.ctx.log(error);
    const res = this.ctx.res;
    if (res.headersSent || res.destroyed) {
      if (!res.writableEnded) res.destroy();
      return;
    }
    this.#writeJson(rpcErrorResponse(error, this.ctx.rpcId));
  }

  /** The gateway is the MCP server here: a backend failure is a JSON-RPC error of this request. */
  #answerError(error: GatewayError, problem: GatewayError | null): void {
    this.#done(problem);
    this.ctx.log(error);
    this.#respond(rpcErrorResponse(this.#listener.errorFor(this, error), this.ctx.rpcId));
  }

  // ---- SSE (HookedEventsHost) ----

  /** An event as the client gets it: the routed id, the message rewritten, or the hooked response. */
  #render(event: SseEvent, response: JsonRpcResponse | null): string {
    // Parked by an earlier event of the same chunk: the rest waits for the retry.
    if (this.#held !== null) {
      this.#held.push(event);
      return '';
    }
    // A resumed stream's response waits for its claim: what follows it waits too (bounded: nothing of a request's stream comes after its response).
    if (this.#claiming !== null) {
      if (this.#claiming.length < MAX_HELD_EVENTS) this.#claiming.push(event);
      return '';
    }
    const index = this.link.index;
    const id = this.#eventId(event.id);
    if (response === null) {
      let message = eventMessage(event);
      if (this.body === null && message !== null && !('method' in message)) return this.#resumedResponse(event, id, message);
      if (message !== null && !('method' in message) && message.id === this.#backendId) {
        if (this.#handsOver(message)) return '';
        this.#delivered();
        if (this.ctx.envelope !== null) return this.#modernResponse(message, id, event);
      }
      if (message !== null && this.ctx.envelope !== null && 'method' in message) {
        // A modern client takes no request of a backend: the call is parked until it answers.
        if ('id' in message) return this.#park(message as JsonRpcRequest);
        // Nor log messages it did not ask for (a legacy backend logs by its session's level).
        if (message.method === 'notifications/message' && !logWanted(this.ctx.envelope.logLevel, message.params?.['level'])) return '';
      }
      return eventTowardClient(event, id, index, this.#answering, message);
    }
    if (this.#handsOver(response)) return '';
    this.#delivered();
    this.#noteTask(response);
    if (this.ctx.envelope !== null) return this.#modernResponse(response, id, event);
    const rewritten = towardClient(index, response, this.ctx.rpcId);
    return rewritten === null ? '' : formatSseEvent({ id, event: event.event, retry: event.retry, data: JSON.stringify(rewritten) });
  }

  /** The id the client gets for a backend's event id: the backend's index, this answer's ticket (issued with the first one), the backend's id. */
  #eventId(backendId: string | null): string | null {
    if (!isResumableEventId(backendId)) return null;
    let ticket = this.#ticket;
    if (ticket === undefined) {
      // Only a legacy client resumes streams (a modern one has no GET): no ticket for a modern one.
      ticket = this.#ticket = this.ctx.envelope === null ? this.#listener.tickets.issue(this.session.id, this.link.name, this.#backendId) : null;
    }
    return routedEventId(this.link.index, backendId, ticket === null ? null : ticket.token);
  }

  /** This request's response is the client's now (or on its way): a resumption through this replica does not deliver it again. */
  #delivered(): void {
    this.#answered = true;
    if (this.#ticket) this.#listener.tickets.delivered(this.#ticket);
  }

  // ---- a resumed stream's response ----

  /**
   * A response on a resumed stream: it passes if it answers the request its ticket names, and
   * only for the first stream that claims the ticket (whichever replica it is on); any other
   * response is dropped — a backend cannot answer on a resumed stream what it was not asked
   * there. A claim Redis must answer holds the rest of the stream until it has.
   */
  #resumedResponse(event: SseEvent, id: string | null, message: JsonRpcResponse): string {
    const ticket = this.#ticket;
    if (ticket === null || ticket === undefined || this.#answered || message.id !== ticket.requestId) return '';
    const claimed = this.#listener.tickets.claim(ticket);
    if (typeof claimed === 'boolean') return claimed ? this.#passResumed(event, id, message) : '';
    this.#claiming = [];
    claimed.then(
      (won) => this.#claimed(won, event, id, message),
      () => this.#claimed(false, event, id, message),
    );
    return '';
  }

  #passResumed(event: SseEvent, id: string | null, message: JsonRpcResponse): string {
    this.#answered = true;
    return eventTowardClient(event, id, this.link.index, message.id, message);
  }

  /** The claim is settled: the response (if it won), then what was held, then the end if it came. */
  #claimed(won: boolean, event: SseEvent, id: string | null, message: JsonRpcResponse): void {
    const held = this.#claiming ?? [];
    this.#claiming = null;
    if (this.cancelled || this.ctx.res.writableEnded || this.ctx.res.destroyed) return;
    let out = won ? this.#passResumed(event, id, message) : '';
    for (const next of held) out += this.#render(next, null);
    this.write(out);
    if (this.#endedClaiming && this.#claiming === null) {
      this.#endedClaiming = false;
      this.end();
    }
  }

  /** The response as a modern client gets it: complete, and under its request's id (a retry's, after a park). */
  #modernResponse(response: JsonRpcResponse, id: string | null, event: SseEvent): string {
    const shaped = completed({ ...response, id: this.ctx.rpcId });
    return formatSseEvent({ id, event: event.event, retry: event.retry, data: JSON.stringify(this.#listener.perCaller ? privately(shaped) : shaped) });
  }

  // ---- parking (a legacy backend asks a modern client for input) ----

  /** The backend's request becomes an input_required answer to the client; the call waits for its retry. */
  #park(request: JsonRpcRequest): string {
    const key = `input-${++this.#asked}`;
    const state = this.#listener.park(this, new Map([[key, request]]));
    if (state === null) return '';
    const { id: _id, jsonrpc: _jsonrpc, ...embedded } = request;
    const answer = { jsonrpc: '2.0', id: this.ctx.rpcId, result: { resultType: 'input_required', inputRequests: { [key]: embedded }, requestState: state } };
    // The client's answer ends here; the backend's stream (or pending JSON answer) does not: what it sends is held.
    this.#held = [];
    if (this.ctx.inflight === this) this.ctx.inflight = null;
    const res = this.ctx.res;
    if (res.writableEnded) return '';
    // On an event stream (the call's, or a resumed one's) as its last event; else, a JSON answer not begun yet, as the whole answer.
    if (res.headersSent) res.end(formatSseEvent({ event: 'message', data: JSON.stringify(answer) }));
    else this.#writeBody(Buffer.from(JSON.stringify(answer)));
    return '';
  }

  /**
   * A request for input the backend sent on its session's own stream (a legacy server in JSON
   * response mode asks there), which the listener found this call to be the one in flight to
   * ask it in (a modern client takes requests only as input_required answers of its calls). It
   * is asked as one on the call's stream would be; while the call is parked, it is asked next.
   * False when this call can take no more requests (its answer is written, or it ended).
   */
  askFromStream(request: JsonRpcRequest): boolean {
    if (this.cancelled || this.#answered || this.#handedOver || this.ctx.envelope === null) return false;
    if (this.#held !== null) {
      (this.#asks ??= []).push(request);
      return true;
    }
    this.#park(request);
    return true;
  }

  #holdEvents(events: Iterable<SseEvent>): boolean {
    for (const event of events) this.#held!.push(event);
    // Bounded: a backend that keeps talking to a parked call is cut off.
    if (this.#held!.length > MAX_HELD_EVENTS) {
      this.expire();
      return false;
    }
    return true;
  }

  /** The client's retry (`ctx`) resumes the parked call: what was held first, then the rest of the stream. */
  resumeWith(ctx: Context): void {
    if (this.cancelled) {
      // It ended while it waited (the backend said too much, or the gateway is closing).
      const error = new GatewayError('backend_error', `backend "${this.link.name}" ended the call while it waited for the client's answer`, { extra: { backend: this.link.name } });
      ctx.log(error);
      ctx.fail(new GatewayError('backend_error', error.description, { status: 200, rpcCode: -32603, extra: { backend: this.link.name } }));
      return;
    }
    const held = this.#held ?? [];
    this.#held = null;
    this.#resumed = true;
    this.ctx = ctx;
    ctx.inflight = this;
    this.#events?.retarget(ctx);
    const list = ['content-type', 'text/event-stream', 'cache-control', 'no-cache, no-transform', 'x-accel-buffering', 'no', 'x-request-id', ctx.requestId];
    pushCorsHeaders(list, ctx.corsOrigin);
    ctx.res.writeHead(200, list);
    ctx.res.flushHeaders();
    if (this.#events !== null) this.#events.push(held);
    else if (held.length > 0) this.write(held.map((event) => this.#render(event, null)).join(''));
    // A request the backend's session stream brought meanwhile is the next round (unless a held one parked the call again).
    const next = this.#held === null ? this.#asks?.shift() : undefined;
    if (next !== undefined) this.#park(next);
    if (this.#endedParked && this.#held === null) {
      this.#endedParked = false;
      if (this.#mode === 'sse') this.streamEnded();
      else this.#json(this.#parkedBody ?? EMPTY);
    } else this.resume();
  }

  /** A parked call nobody resumed: the backend's stream is closed. */
  expire(): void {
    this.#held = null;
    this.cancel();
  }

  write(text: string): boolean {
    if (text.length === 0) return true;
    if (this.ctx.res.writableEnded) return false;
    return writeToClient(this.ctx.res, Buffer.from(text), this);
  }

  finish(): void {
    if (this.#handedOver) return; // the stream is the relay's now
    if (!this.ctx.res.writableEnded) {
      const rest = this.rest();
      this.ctx.res.end(rest.length > 0 ? rest : undefined);
    }
    this.#done(null);
  }

  hookFailed(err: unknown): void {
    this.cancel();
    this.fail(err instanceof GatewayError ? err : new GatewayError('internal_error', 'a response hook failed', { detail: String(err), cause: err }));
  }

  protected fail(error: GatewayError): void {
    const ctx = this.ctx;
    if (!ctx.res.headersSent && !this.#answered) {
      this.#answerError(error, error);
      return;
    }
    this.#done(error);
    if (ctx.res.writableEnded) return;
    if (this.#mode === 'sse' && ctx.rpcId !== null) {
      ctx.res.end(formatSseEvent({ event: 'message', data: errorBody(error, ctx) }));
    } else {
      ctx.res.destroy();
    }
    ctx.log(error);
  }

  // ---- the exchange ends ----

  /** The client left, or the gateway is closing the stream: the backend exchange stops too. */
  override cancel(): void {
    super.cancel();
    this.#settle();
  }

  /** OpenStream: shutdown ends a routed SSE answer (after the grace period) or a resumed stream (at once). */
  close(): void {
    this.cancel();
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
  }

  #done(problem: GatewayError | null): void {
    this.#settle();
    this.#listener.outcome(this, problem);
  }

  /** Forgets the request: in-flight routing, the open stream, the context's abort hook. */
  #settle(): void {
    this.session.callEnded(this.link.name, this);
    if (this.ctx.rpcId !== null && this.body !== null) this.session.inflight.delete(this.ctx.rpcId);
    if (this.#mode === 'sse') this.#streams.delete(this);
    if (this.ctx.inflight === this) this.ctx.inflight = null;
  }
}
