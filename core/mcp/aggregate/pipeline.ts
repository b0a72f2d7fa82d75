/**
 * An aggregated POST, once intake has read and framed it (intake.ts), as named steps:
 *
 *   1. session   the client's session: found (sessions.ts), or opened — a legacy client's
 *                `initialize` (its hooks first), a modern client's implicit session
 *   2. resolve   the backend a routed request goes to and its name there: ctx.target (resolver.ts)
 *   3. hooks     the views' admit steps on the item a call names (per-user policy with the call's
 *                arguments, list-views.ts), then the rate limits of a routed `tools/call`
 *                (rate-limits.ts: after policy, so a call refused or of an unknown tool spends no
 *                token; before the hooks and the backend, so a limited call costs neither), then
 *                the onMessage hooks, on the message as the client sent it: a hook may answer, or
 *                replace the message (which is then resolved again)
 *   4. dispatch  by kind: the client's answer to a backend, a notification (client-messages.ts),
 *                a method the gateway answers itself (own-methods.ts), a routed call (call-routing.ts)
 *   5. answer    the response through its method's onResponse hooks (answer.ts; a routed answer
 *                streams through them in routed.ts)
 *
 * Each step stays synchronous while it can (a session in memory, a cached list, no hook or only
 * sync ones), so a routed call meets no promise until its answer comes back.
 */
import { runMessageHooks } from '../intake.ts';
import type { Chain, HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import { Reply } from '../../plugin-api/reply.ts';
import { respondWhenSettled } from '../../server/respond.ts';
import { isPromise } from '../../base/thenable.ts';
import { META } from '../../protocol/era.ts';
import type { JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import { answerError, METHOD_NOT_FOUND } from './answer.ts';
import { noteConcealed } from '../../server/request-observation.ts';
import type { CallRouting } from './call-routing.ts';
import type { ClientMessages } from './client-messages.ts';
import { clientCapabilities as declaredCapabilities, clientInfo as declaredClientInfo, clientLogLevel } from './declarations.ts';
import type { OwnMethods } from './own-methods.ts';
import type { Resolution, Resolver } from './resolver.ts';
import type { ListViews } from './list-views.ts';
import { rateLimitedResponse, type RateLimited, type RateLimits } from '../rate-limits.ts';
import { isGatewayState } from './parked-calls.ts';
import { AggregatedSession } from './session.ts';
import type { Sessions } from './sessions.ts';

export interface PipelineSteps {
  readonly chain: Chain;
  /** `session.maxSessionSize`: the most a session keeps of what a client declares. */
  readonly maxSessionBytes: number;
  readonly sessions: Sessions;
  readonly resolver: Resolver;
  /** The chain's views when some has an admit step, else null. */
  readonly views: ListViews | null;
  /** `spec.config.rateLimiting`, else null. */
  readonly limits: RateLimits | null;
  readonly messages: ClientMessages;
  readonly own: OwnMethods;
  readonly routing: CallRouting;
}

export class McpPipeline {
  readonly #o: PipelineSteps;

  constructor(steps: PipelineSteps) {
    this.#o = steps;
  }

  /** Serves a POST whose body intake read and framed. */
  serve(ctx: Context): void {
    try {
      if (Array.isArray(ctx.message)) {
        throw new GatewayError('invalid_jsonrpc', 'Invalid Request: JSON-RPC batches are not supported by an aggregated server (MCP 2025-06-18 removed them)');
      }
      respondWhenSettled(ctx, this.#session(ctx, ctx.message!));
    } catch (err) {
      ctx.fail(err);
    }
  }

  // ---- 1. session ----

  #session(ctx: Context, message: JsonRpcMessage): HookOutcome | Promise<HookOutcome> {
    if (ctx.envelope !== null) return this.#implicitSession(ctx, message);
    if ('method' in message && 'id' in message && message.method === 'initialize') return this.#initialize(ctx, message);
    const session = this.#o.sessions.find(ctx);
    return isPromise(session) ? session.then((found) => this.#resolve(ctx, found, message)) : this.#resolve(ctx, session, message);
  }

  /** A legacy client's `initialize`: what it declares checked before its hooks see it, then the hooks, then the session opened. */
  async #initialize(ctx: Context, request: JsonRpcRequest): Promise<HookOutcome> {
    declaredCapabilities(request.params?.capabilities, this.#o.maxSessionBytes, 'params.capabilities');
    const hooked = await runMessageHooks(ctx, this.#o.chain);
    return hooked !== undefined ? hooked : this.#o.sessions.initialize(ctx, request);
  }

  /**
   * A modern client's request: it has no session, so the gateway's implicit one for this
   * principal and these capabilities serves it (implicit-session.ts), created on first use.
   */
  #implicitSession(ctx: Context, message: JsonRpcMessage): HookOutcome | Promise<HookOutcome> {
    // 2026-07-28 defines no client notification over HTTP (a cancellation is the closed stream).
    if (!('method' in message) || !('id' in message)) return Reply.empty(202);
    if (mcpMethod(message.method)?.eras === 'legacy') {
      return answerError(ctx, this.#o.chain, message.id, METHOD_NOT_FOUND, `Method not found: ${message.method} is not part of the ${String(ctx.head.protocolVersion)} protocol`);
    }
    // What the request declares names its implicit session, which keeps it, and goes on to the
    // backends (the modern ones with every request): bounded as an initialize's (declarations.ts).
    const envelope = ctx.envelope!;
    ctx.envelope = {
      capabilities: declaredCapabilities(envelope.capabilities, this.#o.maxSessionBytes, `_meta["${META.clientCapabilities}"]`),
      clientInfo: declaredClientInfo(envelope.clientInfo),
      logLevel: clientLogLevel(envelope.logLevel),
    };
    const session = this.#o.sessions.implicit(ctx);
    if (!(session instanceof AggregatedSession) && !isPromise(session)) return session;
    return isPromise(session) ? session.then((found) => (found instanceof AggregatedSession ? this.#resolve(ctx, found, message) : found)) : this.#resolve(ctx, session, message);
  }

  // ---- 2. resolve ----

  #resolve(ctx: Context, session: AggregatedSession, message: JsonRpcMessage): HookOutcome | Promise<HookOutcome> {
    const routed = 'id' in message && 'method' in message ? this.#o.resolver.resolve(ctx, session, message) : null;
    return isPromise(routed) ? routed.then((resolved) => this.#hooks(ctx, session, message, resolved)) : this.#hooks(ctx, session, message, routed);
  }

  // ---- 3. hooks ----

  #hooks(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Resolution): HookOutcome | Promise<HookOutcome> {
    if (routed !== null && 'target' in routed) {
      ctx.target = routed.target;
      if (routed.subject !== null && this.#o.views !== null) {
        const admitted = this.#o.views.admit(ctx, routed.subject, message as JsonRpcRequest);
        if (isPromise(admitted)) return admitted.then((refusal) => refusal ?? this.#limited(ctx, session, message, routed));
        if (admitted !== undefined) return admitted;
      }
      if (this.#o.limits !== null) return this.#limited(ctx, session, message, routed);
    }
    return this.#messageHooks(ctx, session, message, routed);
  }

  /**
   * The rate limits of a routed call: refused, it is answered a JSON-RPC error in the session (which
   * goes on). A modern client's retry carrying the gateway's own requestState is not counted: it
   * continues a call the limits let through (its answers to the backend's requests for input,
   * which a legacy client sends as responses, uncounted), and starts none: it resumes that parked
   * call or is refused (call-routing.ts, input-rounds.ts).
   */
  #limited(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Resolution): HookOutcome | Promise<HookOutcome> {
    const resumes = ctx.envelope !== null && isGatewayState((message as JsonRpcRequest).params?.['requestState']);
    const limited = this.#o.limits === null || resumes ? null : this.#o.limits.check(ctx, message, ctx.target?.backend ?? null);
    if (limited === null) return this.#messageHooks(ctx, session, message, routed);
    if (!isPromise(limited)) return this.#refuse(ctx, message, limited);
    return limited.then((settled) => (settled === null ? this.#messageHooks(ctx, session, message, routed) : this.#refuse(ctx, message, settled)));
  }

  #refuse(ctx: Context, message: JsonRpcMessage, limited: RateLimited): HookOutcome | Promise<HookOutcome> {
    const { error } = rateLimitedResponse((message as JsonRpcRequest).id, limited);
    return answerError(ctx, this.#o.chain, (message as JsonRpcRequest).id, error!.code, error!.message, error!.data as Record<string, unknown>);
  }

  #messageHooks(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Resolution): HookOutcome | Promise<HookOutcome> {
    const hooked = runMessageHooks(ctx, this.#o.chain);
    if (hooked === undefined && ctx.message === message) return this.#dispatch(ctx, session, message, routed);
    return this.#afterHooks(ctx, session, message, routed, hooked);
  }

  async #afterHooks(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Resolution, hooked: HookOutcome | Promise<HookOutcome>): Promise<HookOutcome> {
    const settled = await hooked;
    if (settled !== undefined) return settled;
    if (ctx.message !== message) {
      // A hook replaced the message: it is routed as replaced.
      if (Array.isArray(ctx.message)) throw new GatewayError('internal_error', 'an onMessage hook replaced the message with a batch, which an aggregated server cannot route');
      message = ctx.message as JsonRpcMessage;
      routed = 'id' in message && 'method' in message ? await this.#o.resolver.resolve(ctx, session, message) : null;
      ctx.target = routed !== null && 'target' in routed ? routed.target : null;
      // What the replacement calls is admitted as what the client called would have been.
      if (routed !== null && 'target' in routed && routed.subject !== null && this.#o.views !== null) {
        const refusal = await this.#o.views.admit(ctx, routed.subject, message as JsonRpcRequest);
        if (refusal !== undefined) return refusal;
      }
    }
    return this.#dispatch(ctx, session, message, routed);
  }

  // ---- 4. dispatch ----

  #dispatch(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Resolution): HookOutcome | Promise<HookOutcome> {
    if (!('method' in message)) return this.#o.messages.answer(ctx, session, message);
    if (!('id' in message)) return this.#o.messages.notify(ctx, session, message);
    if (routed === null) return this.#o.own.answer(ctx, session, message);
    if ('target' in routed) return this.#o.routing.route(ctx, session, routed.link, routed.request);
    const answered = answerError(ctx, this.#o.chain, message.id, routed.code, routed.message);
    if (routed.concealed === true) noteConcealed(ctx);
    return answered;
  }
}
