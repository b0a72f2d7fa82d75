/**
 * What a client sends an aggregated session that is not a request: its notifications go to the
 * backends that can hear them (a cancellation: to the request's backend), and its answers to a
 * backend's requests (sampling, elicitation, roots) go back to the backend that asked (the id says
 * which, ids.ts), or to the round of a call the gateway relays for a modern backend (input-relay.ts).
 */
import type { HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError, untrusted } from '../../base/errors.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import { Reply } from '../../plugin-api/reply.ts';
import { isModernVersion } from '../../protocol/era.ts';
import type { JsonRpcNotification, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import type { BackendLink } from './backend-link.ts';
import type { SessionHealer } from './healing.ts';
import { unwrapInputRequestId, unwrapRequestId } from './ids.ts';
import type { InputRounds } from './input-rounds.ts';
import type { AggregatedSession } from './session.ts';

export class ClientMessages {
  readonly #links: readonly BackendLink[];
  readonly #healer: SessionHealer;
  readonly #rounds: InputRounds;

  constructor(links: readonly BackendLink[], healer: SessionHealer, rounds: InputRounds) {
    this.#links = links;
    this.#healer = healer;
    this.#rounds = rounds;
  }

  /** A client's notification: to the legacy backends of the session (a cancellation: to the cancelled request's). */
  async notify(ctx: Context, session: AggregatedSession, notification: JsonRpcNotification): Promise<HookOutcome> {
    // A request's method sent without an id (`tools/call`): no notification, and sent on it would
    // reach every backend past routing, exclusions, policy and rate limits, where one may run it.
    const entry = mcpMethod(notification.method);
    if (entry !== undefined && entry.kind !== 'notification') return Reply.empty(202);
    // Modern backends take no notifications over HTTP (a cancellation is the closed stream).
    let targets = this.#links.filter((link) => session.has(link.name) && !isModernVersion(session.usable(link.name)!.protocolVersion));
    if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      const index = typeof requestId === 'string' || typeof requestId === 'number' ? session.inflight.get(requestId) : undefined;
      if (index !== undefined) targets = [this.#links[index]!];
    }
    // A backend that lost the session has nothing this could be about: it is not joined for it.
    await Promise.allSettled(
      targets.map((link) => {
        const backend = session.usable(link.name);
        return backend === undefined ? undefined : this.#healer.send(ctx, session, link, backend, notification);
      }),
    );
    return Reply.empty(202);
  }

  /** The client's answer to a backend's request (sampling, elicitation, roots): back to that backend. */
  async answer(ctx: Context, session: AggregatedSession, response: JsonRpcResponse): Promise<HookOutcome> {
    // An answer to what the gateway asked on a modern backend's behalf (input-relay.ts).
    const input = unwrapInputRequestId(response.id);
    if (input !== null) {
      if (!(await this.#rounds.deliver(session.id, input.waitId, input.position, response))) {
        throw new GatewayError('invalid_jsonrpc', `Invalid Request: no request of this session waits for id ${untrusted(String(response.id))}`);
      }
      return Reply.empty(202);
    }
    const origin = unwrapRequestId(response.id);
    const link = origin === null ? undefined : this.#links[origin.backendIndex];
    if (origin === null || link === undefined || !session.backends.has(link.name)) {
      throw new GatewayError('invalid_jsonrpc', `Invalid Request: no request of this session has id ${JSON.stringify(response.id)}`);
    }
    const backend = session.usable(link.name);
    if (backend === undefined) {
      throw new GatewayError('backend_unavailable', `backend "${link.name}" lost the session: the request this answers is gone`, { extra: { backend: link.name } });
    }
    const result = await this.#healer.send(ctx, session, link, backend, { ...response, id: origin.id });
    const problem = link.problem(result, 'the response');
    if (problem !== null) return problem;
    return Reply.empty(202);
  }
}
