/**
 * The dispatch step of a routed request (tools/call, prompts/get, resources/*, completion,
 * tasks/*): sent to the backend the resolve step chose, on the session's backend session (joined
 * first when the backend is not in the session), its answer streamed back (routed.ts), which
 * reports here how it ended: answered, failed (the backend's health hears of it), lost (the
 * backend forgot the session: it joins again and the request goes once more), or handed to the
 * input rounds (a call that needs the client's input first).
 */
import { Buffer } from 'node:buffer';
import type { Chain, HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError, rpcErrorResponse } from '../../base/errors.ts';
import { respond } from '../../server/respond.ts';
import { isPromise } from '../../base/thenable.ts';
import { isModernVersion, towardLegacy } from '../../protocol/era.ts';
import { readAlikeByAll } from '../../protocol/json-scan.ts';
import { withoutEnvelope } from '../../protocol/envelope-tails.ts';
import type { JsonRpcId, JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import type { OpenStreams } from '../streams.ts';
import { answer, answerError, INTERNAL_ERROR, INVALID_PARAMS } from './answer.ts';
import { callerMustReauthenticate, forBackend, GATEWAY_ENVELOPE, type BackendLink } from './backend-link.ts';
import type { SessionHealer } from './healing.ts';
import { mayBeAsked, type HeldStreams } from './held-streams.ts';
import { reasonOf } from './init.ts';
import type { InputRounds } from './input-rounds.ts';
import { isGatewayState } from './parked-calls.ts';
import type { ResumeTickets, Ticket } from './resume-tickets.ts';
import { RoutedExchange } from './routed.ts';
import type { RouteListener } from './route-listener.ts';
import { MAX_SUBSCRIPTIONS_PER_BACKEND, type AggregatedSession } from './session.ts';
import type { BackendSessionRecord } from './session-store.ts';

export interface CallRoutingOptions {
  readonly chain: Chain;
  readonly streams: OpenStreams;
  readonly healer: SessionHealer;
  readonly rounds: InputRounds;
  readonly held: HeldStreams;
  readonly tickets: ResumeTickets;
  /** `session.maxSessionSize`: what a session keeps of a client's subscriptions on modern backends. */
  readonly maxSessionBytes: number;
  /** Whether an answer may name a backend to the caller (plugin views); null: always. */
  readonly knows: ((ctx: Context, backend: string) => boolean) | null;
}

/**
 * What a caller who may not know a backend is told of its failure: that the request failed, with
 * the same code and status, and nothing of the backend (its name, its words, its status); the log
 * keeps the whole error.
 */
export function concealed(error: GatewayError): GatewayError {
  return new GatewayError(error.code, 'the request failed: the server that serves it is unavailable', { status: error.status, ...(error.rpcCode === null ? {} : { rpcCode: error.rpcCode }), detail: error.description });
}

export class CallRouting implements RouteListener<RoutedExchange> {
  readonly #o: CallRoutingOptions;
  /** Which response a resumed request stream may carry, through any replica (RouteListener). */
  readonly tickets: ResumeTickets;

  constructor(options: CallRoutingOptions) {
    this.#o = options;
    this.tickets = options.tickets;
  }

  /**
   * Forwards a routed request to `link`, its answer streamed back; the backend joins the session
   * first when it is not in it, and joins again (once) when it says it lost the session.
   */
  route(ctx: Context, session: AggregatedSession, link: BackendLink, request: JsonRpcRequest): HookOutcome | Promise<HookOutcome> {
    if (ctx.envelope !== null && isGatewayState(request.params?.['requestState'])) return this.#o.rounds.resume(ctx, link, request);
    const backend = session.usable(link.name);
    if (backend !== undefined) {
      // The session's GET stream to this backend is on its way: the call follows it (stream-openings.ts).
      const opening = session.stream?.opening(link.index) ?? null;
      return opening === null ? this.#send(ctx, session, link, backend, request, true) : opening.then(() => this.#send(ctx, session, link, backend, request, true));
    }
    return this.#o.healer.join(ctx, session, link).then(
      (joined) => this.#send(ctx, session, link, joined, request, true),
      (err: unknown) => this.#unavailable(ctx, link, request.id, err),
    );
  }

  /** The backend could not be joined: the caller's credentials refused (the whole request answers), or the backend is unavailable (this request's error). */
  #unavailable(ctx: Context, link: BackendLink, id: JsonRpcId, err: unknown): HookOutcome | Promise<HookOutcome> {
    if (callerMustReauthenticate(err)) return err;
    if (!this.#mayName(ctx, link)) return answerError(ctx, this.#o.chain, id, INTERNAL_ERROR, concealed(new GatewayError('backend_error', reasonOf(err))).description, { error: 'backend_unavailable' });
    return answerError(ctx, this.#o.chain, id, INTERNAL_ERROR, reasonOf(err), { error: 'backend_unavailable', backend: link.name });
  }

  get perCaller(): boolean {
    return this.#o.knows !== null;
  }

  /** Whether the caller may be told of `link` (plugin views decide; without them, always). */
  #mayName(ctx: Context, link: BackendLink): boolean {
    return this.#o.knows === null || this.#o.knows(ctx, link.name);
  }

  /** The error a routed exchange answers with: concealed from a caller who may not know its backend. */
  errorFor(exchange: RoutedExchange, error: GatewayError): GatewayError {
    return this.#mayName(exchange.ctx, exchange.link) ? error : concealed(error);
  }

  /**
   * A legacy client's resources/subscribe (or unsubscribe) of a modern backend's resource: a
   * modern backend takes subscriptions in its listen, so the session keeps it and the backend's
   * listen on the client's GET stream opens again with it.
   */
  #subscribeModern(ctx: Context, session: AggregatedSession, link: BackendLink, request: JsonRpcRequest): HookOutcome | Promise<HookOutcome> {
    const chain = this.#o.chain;
    const uri = request.params?.['uri'];
    if (typeof uri !== 'string') return answerError(ctx, chain, request.id, INVALID_PARAMS, 'Invalid params: uri is required');
    const maxBytes = this.#o.maxSessionBytes;
    switch (session.subscribe(link.name, uri, request.method === 'resources/subscribe', maxBytes)) {
      case 'changed':
        session.stream?.backendJoined(link.name);
        break;
      case 'too large':
        return answerError(ctx, chain, request.id, INVALID_PARAMS, `Invalid params: a session keeps at most ${maxBytes} bytes of resource subscriptions (their URIs, session.maxSessionSize): unsubscribe one first`);
      case 'too many':
        return answerError(ctx, chain, request.id, INVALID_PARAMS, `Invalid params: a session keeps at most ${MAX_SUBSCRIPTIONS_PER_BACKEND} resource subscriptions on ${this.#mayName(ctx, link) ? `backend "${link.name}"` : 'the server of this resource'}: unsubscribe one first`);
    }
    return answer(ctx, chain, { jsonrpc: '2.0', id: request.id, result: {} });
  }

  #send(ctx: Context, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, request: JsonRpcRequest, mayRetry: boolean): HookOutcome | Promise<HookOutcome> {
    if (isModernVersion(backend.protocolVersion) && (request.method === 'resources/subscribe' || request.method === 'resources/unsubscribe')) return this.#subscribeModern(ctx, session, link, request);
    // The backend must run what was routed and checked: the client's bytes only where every
    // reader reads them as JSON.parse did here (#clientBytes; a body with a key twice,
    // `"name":"hidden","name":"allowed"`, is read last-wins here but first-wins by some backends'
    // parsers), else written anew from the parsed message. In the backend's era.
    const spliced = this.#clientBytes(ctx, session, request, backend);
    const sent = spliced === null ? forBackend(request, backend, ctx.envelope ?? (isModernVersion(backend.protocolVersion) ? session.envelope : GATEWAY_ENVELOPE)) : request;
    const body = spliced ?? Buffer.from(JSON.stringify(sent));
    const headers = link.headers(ctx, backend, 'application/json, text/event-stream', undefined, sent);
    if (isPromise(headers)) return headers.then((settled) => this.#withHeaders(ctx, session, link, backend, body, mayRetry, settled));
    return this.#withHeaders(ctx, session, link, backend, body, mayRetry, headers);
  }

  /**
   * The client's own bytes for a legacy backend, when nothing is to change: the request is the one
   * the client sent (no name rewritten), no hook sees messages (with onMessage or onResponse
   * hooks, the backend gets what the hooks saw, written anew), and every reader reads the bytes
   * as JSON.parse did (json-scan.ts: no key twice, none spelled with an escape). A modern
   * client's has its envelope cut out, when the request was read by its known tail
   * (envelope-tails.ts); a legacy client's goes as it came when towardLegacy leaves it alone (no
   * modern envelope in its `_meta`). Writing the message anew costs several times the scan.
   * Null: the parsed message, written anew.
   */
  #clientBytes(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, backend: BackendSessionRecord): Buffer | null {
    if (request !== ctx.message || ctx.body === null || this.#o.chain.seesMessages || isModernVersion(backend.protocolVersion)) return null;
    if (ctx.envelope !== null) {
      if (ctx.envelopeAt === -1) return null;
      // The bytes the backend gets are checked, not the client's: the envelope cut out is not the backend's to read.
      const cut = withoutEnvelope(ctx.body, ctx.envelopeAt);
      return readAlikeByAll(cut) ? cut : null;
    }
    return towardLegacy(request) === request && readAlikeByAll(ctx.body) ? ctx.body : null;
  }

  #withHeaders(ctx: Context, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, body: Buffer, mayRetry: boolean, headers: string[] | GatewayError): HookOutcome | Promise<HookOutcome> {
    // Array.isArray, not instanceof: V8 looks up GatewayError's Symbol.hasInstance at each (~250 instructions).
    if (!Array.isArray(headers)) return this.#credentialFailure(ctx, link, headers);
    headers.push('content-type', 'application/json');
    if (!mayBeAsked(ctx, session, backend)) return this.#start(ctx, session, link, backend, body, mayRetry, headers, false);
    // The backend may ask this call for input on its session's own stream: that stream is open first.
    const opening = this.#o.held.hold(ctx, session, link, backend);
    if (opening === null) return this.#start(ctx, session, link, backend, body, mayRetry, headers, true);
    return opening.then(() => this.#start(ctx, session, link, backend, body, mayRetry, headers, true));
  }

  #start(ctx: Context, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, body: Buffer, mayRetry: boolean, headers: string[], askable: boolean): HookOutcome {
    if (ctx.res.destroyed) return undefined;
    if (ctx.rpcId !== null) session.inflight.set(ctx.rpcId, link.index);
    const createsTask = (ctx.message as JsonRpcRequest).params?.task !== undefined;
    const exchange = new RoutedExchange(ctx, link, session, backend, this, this.#o.streams, this.#o.chain.responseHooks(ctx.rpcMethod), createsTask, body, mayRetry);
    if (askable) session.callStarted(link.name, exchange);
    exchange.dispatch(link.requests, 'POST', headers, body);
    return undefined;
  }

  /**
   * A prepareBackend hook could not give the request its credentials. A refusal of the caller
   * (401, 403) answers the request as HTTP; any other failure (the token exchange service down
   * or slow) is that backend's: the call gets a JSON-RPC error naming it, the session goes on.
   */
  #credentialFailure(ctx: Context, link: BackendLink, err: GatewayError): HookOutcome | Promise<HookOutcome> {
    if (err.status === 401 || err.status === 403 || ctx.rpcId === null) return err;
    ctx.log(err);
    if (!this.#mayName(ctx, link)) return answer(ctx, this.#o.chain, rpcErrorResponse(concealed(err), ctx.rpcId));
    const response = rpcErrorResponse(err, ctx.rpcId);
    response.error.data['backend'] = link.name;
    return answer(ctx, this.#o.chain, response);
  }

  /** A stream resumed with the Last-Event-ID of a routed answer (client-streams.ts): that backend replays it. */
  resumeStream(ctx: Context, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, headers: string[], ticket: Ticket | null): void {
    new RoutedExchange(ctx, link, session, backend, this, this.#o.streams, null, false, null, false, ticket).dispatch(link.streams, 'GET', headers, null);
  }

  // ---- RouteListener ----

  /** The backend forgot the session (it restarted): it joins again, then the request goes once more. */
  lost(exchange: RoutedExchange): void {
    const { ctx, session, link } = exchange;
    this.#o.healer
      .rejoin(ctx, session, link, exchange.backendSession)
      .then(
        (backend) => this.#send(ctx, session, link, backend, JSON.parse(exchange.body!.toString('utf8')) as JsonRpcRequest, false),
        (err: unknown) => this.#unavailable(ctx, link, ctx.rpcId, err),
      )
      .then(
        (outcome) => respond(ctx, outcome),
        (err: unknown) => ctx.fail(err),
      );
  }

  stillKnown(exchange: RoutedExchange): Promise<boolean> {
    return this.#o.healer.stillKnown(exchange.ctx, exchange.link, exchange.backendSession);
  }

  inputRequired(exchange: RoutedExchange, response: JsonRpcResponse): void {
    this.#o.rounds.relay(exchange, response);
  }

  park(exchange: RoutedExchange, requests: ReadonlyMap<string, JsonRpcRequest>): string | null {
    return this.#o.rounds.park(exchange, requests);
  }

  outcome(exchange: RoutedExchange, problem: GatewayError | null): void {
    // The gateway's own stream limit refused it: the backend was never asked, its health is not in question.
    if (problem?.code === 'stream_limit') return;
    if (problem === null) this.#o.healer.succeeded(exchange.link);
    else this.#o.healer.failed(exchange.session, exchange.link, exchange.backendSession, problem);
  }
}
