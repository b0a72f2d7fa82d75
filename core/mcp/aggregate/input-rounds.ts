/**
 * Calls that need the client's input before the backend answers them, across the generations
 * of MCP (input-relay.ts, parked-calls.ts, remote-resume.ts do the work; this is where a session
 * reaches them):
 *
 *  - a modern backend answers a legacy client's call `input_required`: the gateway asks the
 *    client on the call's stream, round by round, and retries for it (relayInput);
 *  - a legacy backend asks a modern client something during a call: the call is parked, the
 *    client gets `input_required` with a requestState of the gateway's, and its retry (on this
 *    replica, or on another that relays it here) gives the answers to the backend and resumes
 *    the call's stream into the retry's answer.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Chain, HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import type { ClientEnvelope } from '../../protocol/era.ts';
import type { JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import { answerError, INTERNAL_ERROR, INVALID_PARAMS } from './answer.ts';
import type { BackendLink } from './backend-link.ts';
import type { SessionHealer } from './healing.ts';
import { InputWaits, relayInput } from './input-relay.ts';
import { MAX_PARKED_PER_BACKEND, MAX_PARKED_PER_PRINCIPAL, ParkedCalls } from './parked-calls.ts';
import { replicaOf, type Relay, type RelayMessage } from './relay.ts';
import { relayedContext, RemoteAnswers } from './remote-resume.ts';
import type { RoutedExchange } from './routed.ts';

/** What a parked call is about, as its requestState binds it: the backend and that backend's name of the tool. */
function targetKey(ctx: Context): string {
  return `${ctx.target?.backend ?? ''}\n${ctx.target?.name ?? ''}`;
}

/** The answers a modern client's retry carries (`inputResponses`), or none. */
function inputResponsesOf(request: JsonRpcRequest): Record<string, unknown> {
  const given = request.params?.['inputResponses'];
  return typeof given === 'object' && given !== null && !Array.isArray(given) ? (given as Record<string, unknown>) : {};
}

export interface InputRoundsOptions {
  readonly chain: Chain;
  readonly healer: SessionHealer;
  /** How this replica tells the others about what it holds (relay.ts): started already. */
  readonly relay: Relay;
  readonly log: Logger;
}

export class InputRounds {
  readonly #o: InputRoundsOptions;
  /** Requests for input asked of legacy clients on modern backends' behalf. */
  readonly waits: InputWaits;
  /** Modern clients' calls a legacy backend interrupted with a request, waiting for their retries. */
  readonly #parked: ParkedCalls<RoutedExchange>;
  /** Retries here of calls parked on other replicas, waiting for what those relay. */
  readonly #remote = new RemoteAnswers();
  /** Calls parked here and resumed by a retry on another replica, by resume id (the client may leave). */
  readonly #resumedElsewhere = new Map<string, RoutedExchange>();

  constructor(options: InputRoundsOptions) {
    this.#o = options;
    this.waits = new InputWaits(options.relay.replica);
    this.#parked = new ParkedCalls<RoutedExchange>(options.relay.key, options.relay.replica);
    options.relay.onMessage((message) => this.#relayed(message));
  }

  // ---- a modern backend asks a legacy client ----

  /** The backend answered the call `input_required`: the client is asked, round by round, on the call's stream. */
  relay(exchange: RoutedExchange, response: JsonRpcResponse): void {
    const { ctx, session, link, backendSession } = exchange;
    const request = JSON.parse(exchange.body!.toString('utf8')) as JsonRpcRequest;
    void relayInput(
      {
        ctx,
        session,
        link,
        request,
        waits: this.waits,
        call: (message, sink, timing) => this.#o.healer.send(ctx, session, link, backendSession, message, sink, timing),
        hooks: this.#o.chain.responseHooks(ctx.rpcMethod),
      },
      response,
    );
  }

  /** A legacy client's answer to a request asked on a modern backend's behalf, wherever it waits: false when none does. */
  async deliver(sessionId: string, waitId: string, position: number, response: JsonRpcResponse): Promise<boolean> {
    const holder = replicaOf(waitId);
    if (holder === this.#o.relay.replica) return this.waits.deliver(sessionId, waitId, position, response);
    return this.#o.relay.send(holder, { type: 'answer', session: sessionId, waitId, position, response });
  }

  // ---- a legacy backend asks a modern client ----

  /** Parks the call on the backend's requests: the requestState the client's retry must carry, or null (the backend was told why not). */
  park(exchange: RoutedExchange, requests: ReadonlyMap<string, JsonRpcRequest>): string | null {
    const { ctx, session, link, backendSession } = exchange;
    const refuse = (request: JsonRpcRequest, why: string): null => {
      // The backend hears it at once instead of waiting for an answer that cannot come.
      void this.#o.healer.send(ctx, session, link, backendSession, { jsonrpc: '2.0', id: request.id, error: { code: INTERNAL_ERROR, message: why } }).catch(() => undefined);
      return null;
    };
    const capabilities = ctx.envelope?.capabilities ?? {};
    for (const request of requests.values()) {
      const needed = mcpMethod(request.method)?.capability ?? null;
      if (needed === null || capabilities[needed] === undefined) return refuse(request, `the client did not declare the ${needed ?? request.method} capability`);
    }
    const asked = new Map([...requests].map(([key, request]) => [key, { id: request.id, method: request.method, params: request.params }]));
    const state = this.#parked.park(exchange, asked, ctx.principal, ctx.rpcMethod ?? '', targetKey(ctx), link.name);
    return state ?? refuse(requests.values().next().value!, `the gateway holds too many calls waiting for their clients (at most ${MAX_PARKED_PER_PRINCIPAL} per principal, ${MAX_PARKED_PER_BACKEND} per backend)`);
  }

  /**
   * A modern client's retry of a call the gateway parked (its requestState is the gateway's):
   * each answer goes to the backend as the response to its request, and the parked call's stream
   * goes on into this request's answer.
   */
  async resume(ctx: Context, link: BackendLink, request: JsonRpcRequest): Promise<HookOutcome> {
    const parkId = this.#parked.open(request.params!['requestState'] as string, ctx.principal, request.method, targetKey(ctx));
    if (parkId === null) return this.#refused(ctx, request);
    const responses = inputResponsesOf(request);
    const holder = replicaOf(parkId);
    if (holder !== this.#o.relay.replica) return this.#resumeElsewhere(ctx, holder, parkId, responses);
    const parked = this.#parked.take(parkId);
    if (parked === null || parked.call.link !== link) return this.#refused(ctx, request);
    await this.#answerParked(ctx, parked.call, parked.requests, responses);
    if (ctx.res.destroyed) parked.call.expire();
    else parked.call.resumeWith(ctx);
    return undefined;
  }

  #refused(ctx: Context, request: JsonRpcRequest): HookOutcome | Promise<HookOutcome> {
    return answerError(ctx, this.#o.chain, request.id, INVALID_PARAMS, 'Invalid params: this requestState was not issued by this gateway for this call and principal, was used already, or expired');
  }

  /** Each of the parked call's requests gets the client's answer (or, without one, an error) at its backend. */
  async #answerParked(ctx: Context, exchange: RoutedExchange, requests: ReadonlyMap<string, { readonly id: string | number }>, responses: Record<string, unknown>): Promise<void> {
    await Promise.allSettled(
      [...requests].map(([key, asked]) =>
        this.#o.healer.send(
          ctx,
          exchange.session,
          exchange.link,
          exchange.backendSession,
          responses[key] === undefined ? { jsonrpc: '2.0', id: asked.id, error: { code: INTERNAL_ERROR, message: 'the client gave no answer' } } : { jsonrpc: '2.0', id: asked.id, result: responses[key] },
        ),
      ),
    );
  }

  /** The retry reached this replica, its call is parked on `holder`: that one resumes it, relaying the answer here. */
  async #resumeElsewhere(ctx: Context, holder: string, parkId: string, responses: Record<string, unknown>): Promise<HookOutcome> {
    const relay = this.#o.relay;
    const resumeId = randomBytes(12).toString('base64url');
    this.#remote.expect(resumeId, ctx, () => void relay.send(holder, { type: 'cancel', resumeId }));
    const heard = await relay.send(holder, { type: 'resume', park: parkId, resumeId, from: relay.replica, answers: responses, rpcId: ctx.rpcId, envelope: ctx.envelope });
    if (!heard) this.#remote.relayed({ type: 'gone', resumeId });
    return undefined;
  }

  /** What another replica tells this one (relay.ts): answers for its waits, resumptions of its parked calls, and their relayed answers. */
  #relayed(message: RelayMessage): void {
    const text = (field: string): string | null => (typeof message[field] === 'string' ? (message[field] as string) : null);
    switch (message.type) {
      case 'answer': {
        const [session, waitId, position] = [text('session'), text('waitId'), message['position']];
        if (session !== null && waitId !== null && typeof position === 'number' && typeof message['response'] === 'object' && message['response'] !== null) {
          this.waits.deliver(session, waitId, position, message['response'] as JsonRpcResponse);
        }
        return;
      }
      case 'resume':
        void this.#resumeFor(message).catch((err: unknown) => this.#o.log.error({ err }, 'a parked call could not be resumed for another replica'));
        return;
      case 'cancel': {
        const resumeId = text('resumeId');
        const exchange = resumeId === null ? undefined : this.#resumedElsewhere.get(resumeId);
        if (exchange !== undefined) {
          this.#resumedElsewhere.delete(resumeId!);
          exchange.expire();
        }
        return;
      }
      default:
        this.#remote.relayed(message);
    }
  }

  /** Another replica got the retry of a call parked here: it is resumed into a response relayed there. */
  async #resumeFor(message: RelayMessage): Promise<void> {
    const relay = this.#o.relay;
    const [park, resumeId, from] = [message['park'], message['resumeId'], message['from']];
    if (typeof park !== 'string' || typeof resumeId !== 'string' || typeof from !== 'string') return;
    const parked = this.#parked.take(park);
    if (parked === null || parked.call.cancelled) {
      await relay.send(from, { type: 'gone', resumeId });
      return;
    }
    const exchange = parked.call;
    const answers = typeof message['answers'] === 'object' && message['answers'] !== null ? (message['answers'] as Record<string, unknown>) : {};
    await this.#answerParked(exchange.ctx, exchange, parked.requests, answers);
    const rpcId = message['rpcId'];
    const envelope = (typeof message['envelope'] === 'object' ? message['envelope'] : null) as ClientEnvelope | null;
    const ctx = relayedContext(exchange.ctx, relay, from, resumeId, typeof rpcId === 'string' || typeof rpcId === 'number' ? rpcId : null, envelope);
    this.#resumedElsewhere.set(resumeId, exchange);
    ctx.res.once('close', () => this.#resumedElsewhere.delete(resumeId));
    exchange.resumeWith(ctx);
  }

  close(): void {
    this.#parked.clear();
  }
}
