/**
 * A legacy (2025) client's call that a modern backend answers with `input_required`: the client
 * cannot read such a result, so the gateway asks it itself, as a 2025 server would. Each request
 * the backend embedded (an elicitation, a sampling, a roots/list) is pushed to the client on the
 * call's SSE stream, under an id that names the wait (ids.ts), and only if the client declared
 * that capability; the client answers by POSTing the responses to its session, which land here
 * (`InputWaits.deliver`). Once every answer is in, the call goes to the backend again under a new
 * id with `inputResponses` and the backend's `requestState`, and so on until the backend
 * completes; the client gets that result under its own request's id, through the method's
 * onResponse hooks. Notifications the backend sends on the way (progress) reach the client too.
 */
import { randomBytes } from 'node:crypto';
import { Buffer } from 'node:buffer';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError, rpcErrorResponse } from '../../base/errors.ts';
import { pushCorsHeaders } from '../../http/cors.ts';
import type { ResponseHook } from '../../plugin-api/plugin.ts';
import { runResponseHooks } from '../../server/chain.ts';
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import { formatSseEvent } from '../../protocol/sse.ts';
import type { AbandonableCall, BackendLink, CallResult, CallTiming, MessageSink } from './backend-link.ts';
import { wrapInputRequestId } from './ids.ts';
import type { AggregatedSession } from './session.ts';

/** Rounds of input one call may ask for before the gateway gives up on it. */
const MAX_ROUNDS = 16;
/** How long the client has to answer (a person may be typing). */
const ANSWER_TIMEOUT_MS = 10 * 60_000;
/** Requests for input at once, in this process: past it a call that asks for input fails. */
const MAX_WAITS = 10_000;
/** Calls waiting for one session's answers at once. */
const MAX_WAITS_PER_SESSION = 32;

export function isInputRequired(response: JsonRpcResponse): boolean {
  const result = response.result as { resultType?: unknown } | undefined;
  return result?.resultType === 'input_required';
}

interface Wait {
  readonly sessionId: string;
  readonly answers: (JsonRpcResponse | undefined)[];
  remaining: number;
  readonly done: (answers: (JsonRpcResponse | undefined)[] | GatewayError) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * The requests for input this process asked clients and still waits for. A wait's id starts
 * with this replica's id: an answer posted to another replica is sent on to this one (relay.ts).
 */
export class InputWaits {
  readonly #waits = new Map<string, Wait>();
  readonly #perSession = new Map<string, number>();
  readonly #replica: string;

  constructor(replica: string) {
    this.#replica = replica;
  }

  /** Opens a wait for `count` answers of `session`'s client; resolves with them (or rejects at the timeout). */
  open(session: AggregatedSession, count: number): { id: string; answers: Promise<(JsonRpcResponse | undefined)[]>; cancel(): void } {
    if (this.#waits.size >= MAX_WAITS || (this.#perSession.get(session.id) ?? 0) >= MAX_WAITS_PER_SESSION) {
      throw new GatewayError('backend_error', 'too many requests for input are waiting for their clients');
    }
    const id = this.#replica + randomBytes(12).toString('base64url');
    let cancel = (): void => undefined;
    const answers = new Promise<(JsonRpcResponse | undefined)[]>((resolve, reject) => {
      const finish = (outcome: (JsonRpcResponse | undefined)[] | GatewayError): void => {
        const wait = this.#waits.get(id);
        if (wait === undefined) return;
        clearTimeout(wait.timer);
        this.#waits.delete(id);
        const left = (this.#perSession.get(wait.sessionId) ?? 1) - 1;
        if (left > 0) this.#perSession.set(wait.sessionId, left);
        else this.#perSession.delete(wait.sessionId);
        if (outcome instanceof GatewayError) reject(outcome);
        else resolve(outcome);
      };
      const timer = setTimeout(() => finish(new GatewayError('backend_error', `the client did not answer the backend's request for input within ${ANSWER_TIMEOUT_MS / 60_000} minutes`)), ANSWER_TIMEOUT_MS);
      timer.unref();
      this.#waits.set(id, { sessionId: session.id, answers: new Array(count).fill(undefined), remaining: count, done: finish, timer });
      this.#perSession.set(session.id, (this.#perSession.get(session.id) ?? 0) + 1);
      cancel = () => finish(new GatewayError('internal_error', 'the client went away'));
    });
    answers.catch(() => undefined);
    return { id, answers, cancel };
  }

  /** The client's answer to request `position` of wait `waitId`; false when the session has no such wait here. */
  deliver(sessionId: string, waitId: string, position: number, response: JsonRpcResponse): boolean {
    const wait = this.#waits.get(waitId);
    if (wait === undefined || wait.sessionId !== sessionId || position >= wait.answers.length || wait.answers[position] !== undefined) return false;
    wait.answers[position] = response;
    if (--wait.remaining === 0) wait.done(wait.answers);
    return true;
  }
}

/** The client's side of a relayed call: its SSE stream, opened when the first message must go out. */
class ClientEvents {
  readonly #ctx: Context;
  readonly #sessionId: string;

  constructor(ctx: Context, sessionId: string) {
    this.#ctx = ctx;
    this.#sessionId = sessionId;
  }

  get gone(): boolean {
    return this.#ctx.res.destroyed || this.#ctx.res.writableEnded;
  }

  send(message: JsonRpcMessage): void {
    const res = this.#ctx.res;
    if (this.gone) return;
    if (!res.headersSent) {
      const headers = ['content-type', 'text/event-stream', 'cache-control', 'no-cache, no-transform', 'x-accel-buffering', 'no', 'mcp-session-id', this.#sessionId, 'x-request-id', this.#ctx.requestId];
      pushCorsHeaders(headers, this.#ctx.corsOrigin);
      res.writeHead(200, headers);
    }
    res.write(formatSseEvent({ event: 'message', data: JSON.stringify(message) }));
  }

  /** The call's final response: an event on the stream when one is open, else a JSON answer. */
  end(response: JsonRpcResponse): void {
    const res = this.#ctx.res;
    if (this.gone) return;
    if (res.headersSent) {
      res.end(formatSseEvent({ event: 'message', data: JSON.stringify(response) }));
      return;
    }
    const body = Buffer.from(JSON.stringify(response));
    const headers = ['content-type', 'application/json', 'content-length', String(body.length), 'mcp-session-id', this.#sessionId, 'x-request-id', this.#ctx.requestId];
    pushCorsHeaders(headers, this.#ctx.corsOrigin);
    res.writeHead(200, headers);
    res.end(body);
  }
}

export interface InputRelayOptions {
  readonly ctx: Context;
  readonly session: AggregatedSession;
  readonly link: BackendLink;
  /** The call as the backend got it (its own names), without the envelope (added per round). */
  readonly request: JsonRpcRequest;
  readonly waits: InputWaits;
  /** One round: the call to the backend on the session's behalf, its other messages to `sink`; not timed (the client's own call). */
  readonly call: (message: JsonRpcRequest, sink: MessageSink, timing: CallTiming) => Promise<CallResult>;
  readonly hooks: readonly ResponseHook[] | null;
}

/** Runs the rounds of a call whose first answer (`first`) asked for input; never throws. */
export async function relayInput(o: InputRelayOptions, first: JsonRpcResponse): Promise<void> {
  await new RelayedCall(o).run(first);
}

type InputRequest = { method?: unknown; params?: unknown };
type InputRequired = { inputRequests?: Record<string, InputRequest>; requestState?: unknown };

/** One call relayed round by round: the client asked on the call's stream, the backend asked again with the answers. */
class RelayedCall {
  readonly #o: InputRelayOptions;
  readonly #events: ClientEvents;
  /** The client's answers waited for, while the gateway waits. */
  #pending: { cancel(): void } | null = null;
  /**
   * The round in flight to the backend: the client's own call, which runs as long as the client
   * waits for it, and no longer (its client may leave, even before the round is sent).
   */
  #sent: AbandonableCall | null = null;
  readonly #timing: CallTiming;
  /** The backend's notifications during a round (progress) go to the client; it makes no requests of its own. */
  readonly #sink: MessageSink;

  constructor(o: InputRelayOptions) {
    this.#o = o;
    const events = (this.#events = new ClientEvents(o.ctx, o.session.id));
    this.#timing = {
      started: (call) => {
        if (events.gone) call.abandon();
        else this.#sent = call;
      },
    };
    this.#sink = (message) => {
      if (!('id' in message)) events.send(message);
    };
    o.ctx.inflight = {
      cancel: () => {
        this.#pending?.cancel();
        this.#sent?.abandon();
      },
    };
  }

  async run(first: JsonRpcResponse): Promise<void> {
    const o = this.#o;
    let final: JsonRpcResponse;
    try {
      final = { ...(await this.#rounds(first)), id: o.ctx.rpcId };
    } catch (err) {
      const error = err instanceof GatewayError ? err : new GatewayError('internal_error', 'relaying a request for input failed', { detail: String(err), cause: err });
      o.ctx.log(error);
      final = rpcErrorResponse(error, o.ctx.rpcId);
    } finally {
      o.ctx.inflight = null;
    }
    try {
      const hooked = o.hooks === null ? final : await runResponseHooks(o.hooks, o.ctx, final);
      this.#events.end(hooked);
    } catch (err) {
      o.ctx.log(err instanceof GatewayError ? err : new GatewayError('internal_error', 'a response hook failed', { detail: String(err), cause: err }));
      this.#events.end(rpcErrorResponse(new GatewayError('internal_error', 'a response hook failed'), o.ctx.rpcId));
    }
  }

  /** Round after round until the backend answers without asking (at most MAX_ROUNDS). */
  async #rounds(first: JsonRpcResponse): Promise<JsonRpcResponse> {
    let response = first;
    for (let round = 0; isInputRequired(response); round++) {
      if (round >= MAX_ROUNDS) throw new GatewayError('backend_error', `backend "${this.#o.link.name}" asked for input more than ${MAX_ROUNDS} times`, { extra: { backend: this.#o.link.name } });
      const result = response.result as InputRequired;
      const answers = await this.#ask(Object.entries(result.inputRequests ?? {}));
      response = await this.#retry(result, answers);
    }
    return response;
  }

  /** The backend's requests asked of the client on the call's stream; its answers, by the backend's keys. */
  async #ask(inputRequests: [string, InputRequest][]): Promise<Record<string, unknown>> {
    const inputResponses: Record<string, unknown> = {};
    if (inputRequests.length === 0) return inputResponses;
    const o = this.#o;
    const capabilities = o.session.record.clientCapabilities;
    for (const [, request] of inputRequests) {
      const needed = typeof request?.method === 'string' ? (mcpMethod(request.method)?.capability ?? undefined) : undefined;
      if (needed === undefined || capabilities[needed] === undefined) {
        throw new GatewayError('backend_error', `backend "${o.link.name}" asked the client for ${typeof request?.method === 'string' ? request.method.slice(0, 64) : 'an unknown request'}, which the client did not declare it can answer`, { extra: { backend: o.link.name } });
      }
    }
    const wait = o.waits.open(o.session, inputRequests.length);
    this.#pending = wait;
    inputRequests.forEach(([, request], position) => {
      this.#events.send({ jsonrpc: '2.0', id: wrapInputRequestId(o.link.index, wait.id, position), method: request.method as string, ...(typeof request.params === 'object' && request.params !== null ? { params: request.params as Record<string, unknown> } : {}) });
    });
    const answers = await wait.answers;
    this.#pending = null;
    answers.forEach((answer, position) => {
      // A client's error is no answer: the backend asks again, or gives up, as it sees fit.
      if (answer?.result !== undefined) inputResponses[inputRequests[position]![0]] = answer.result;
    });
    return inputResponses;
  }

  /** The call again, with the client's answers and the backend's requestState: its answer. */
  async #retry(result: InputRequired, inputResponses: Record<string, unknown>): Promise<JsonRpcResponse> {
    const o = this.#o;
    const retry: JsonRpcRequest = {
      ...o.request,
      id: `gatehouse-${randomBytes(9).toString('base64url')}`,
      params: { ...o.request.params, inputResponses, ...(result.requestState === undefined ? {} : { requestState: result.requestState }) },
    };
    const answered = await o.call(retry, this.#sink, this.#timing);
    this.#sent = null;
    const problem = o.link.problem(answered, o.request.method);
    if (problem !== null) throw problem;
    if (answered.response === null) throw new GatewayError('backend_error', `backend "${o.link.name}" gave no answer to ${o.request.method}`, { extra: { backend: o.link.name } });
    return answered.response;
  }
}
