/**
 * The gateway speaking MCP to one backend of an aggregated group, on the backend's own session:
 * a JSON-RPC call whose answer is read whole (JSON) or event by event (SSE, with the messages
 * that precede the response handed to a sink), and the session's initialize, notifications and
 * DELETE. Outgoing credentials come from the prepareBackend hooks compiled for this backend.
 */
import { Buffer } from 'node:buffer';
import type { BackendInfo } from '../../plugin-api/backend.ts';
import { runHooks, type Chain, type HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import type { BackendMetrics } from '../../observe/metrics.ts';
import { OutgoingHeaders } from '../../plugin-api/outgoing-headers.ts';
import { passAllowed } from '../../http/passthrough-headers.ts';
import { moveLast } from '../../base/header-list.ts';
import type { HopMark } from '../../http/hop-mark.ts';
import type { BackendHook } from '../../plugin-api/plugin.ts';
import type { AnswerHead } from '../../upstream/answer-reader.ts';
import { MessageExchange } from '../../upstream/message-exchange.ts';
import type { BackendTransport } from '../../upstream/transport.ts';
import type { Upstreams } from '../../upstream/upstreams.ts';
import { GATEHOUSE_VERSION, isModernVersion, towardLegacy, towardModern, type ClientEnvelope } from '../../protocol/era.ts';
import { standardHeaders } from '../../protocol/standard-headers.ts';
import { parseMessage, type JsonRpcId, type JsonRpcMessage, type JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import type { SseEvent } from '../../protocol/sse.ts';
import type { BackendSessionRecord } from './session-store.ts';
import { isPromise } from '../../base/thenable.ts';

/** Receives the messages a backend sends on a call's stream besides the response itself. */
export type MessageSink = (message: JsonRpcMessage, eventId: string | null) => void;

export interface CallResult {
  readonly status: number;
  /** The backend's `Mcp-Session-Id` response header. */
  readonly sessionId: string | null;
  /** The JSON-RPC response to the request sent; null for a notification, or a non-JSON-RPC answer. */
  readonly response: JsonRpcResponse | null;
  /** The body, when it was not JSON-RPC (an error page): for messages. */
  readonly text: string;
  /** Bytes the answer's body had (every event of a stream): a list's pages are bounded in all. */
  readonly bytes: number;
}

/**
 * How some servers word "I do not know that session" inside a 2xx answer, where the status says
 * nothing: the SDKs' "Session not found", "No valid session ID provided", "session expired /
 * terminated / invalid". Only a reason to ask the backend (see `sessionVerdict`), never a verdict.
 */
const SESSION_WORDS = /\bsession\b[^]{0,40}\b(not found|unknown|expired|terminated|invalid|missing|does not exist)\b|\b(no valid|unknown|invalid|expired|terminated) session\b/i;

/**
 * What a backend's answer to a request on one of its sessions says about that session:
 *  - `kept`: nothing (an answer with a result, or an error that is the request's own): the
 *    answer stands, and a request answered with a result is never sent again;
 *  - `lost`: a 404 without a result, what MCP prescribes for a session the server does not know
 *    (it restarted, or ended it): the request was not run and may be sent on a new session;
 *  - `unsure`: a 400 or 410 without a result (what many servers send instead of 404, each in its
 *    own words: "Invalid or missing session ID", "No valid session ID provided", a bare "Gone"),
 *    or a 2xx JSON-RPC session error (-32001, or the generic -32000, opening with such words).
 *    Whether the session is gone is then asked of the backend itself (a ping on that session,
 *    `BackendLink.stillKnows`), so healing never depends on how a server words its refusal, and
 *    a request the backend refused for a reason of its own is not run on a new session.
 */
export type SessionVerdict = 'kept' | 'lost' | 'unsure';

export function sessionVerdict(status: number, response: JsonRpcResponse | null): SessionVerdict {
  if (response !== null && response.result !== undefined) return 'kept';
  if (status === 404) return 'lost';
  if (status === 400 || status === 410) return 'unsure';
  const error = response?.error;
  const message = typeof error?.message === 'string' ? error.message : undefined;
  if (status < 300 && (error?.code === -32001 || error?.code === -32000) && message !== undefined && SESSION_WORDS.test(message.slice(0, 60))) return 'unsure';
  return 'kept';
}

/** The id of the gateway's ping that asks a backend whether it still knows a session. */
const PROBE_ID = 'gatehouse-session-probe';

/**
 * One POST/DELETE to a backend, its answer collected: a JSON body whole, an event stream event by
 * event. Either holds at most the backend's `maxResponseBytes` in all (the events of a stream
 * summed), past which the call fails naming the bound.
 */
class BackendCall extends MessageExchange {
  readonly result: Promise<CallResult>;
  readonly #requestId: JsonRpcId | undefined;
  readonly #sink: MessageSink | null;
  #resolve!: (result: CallResult) => void;
  #reject!: (error: GatewayError) => void;
  #head: AnswerHead | null = null;
  #response: JsonRpcResponse | null = null;

  constructor(backend: BackendInfo, metrics: BackendMetrics, requestId: JsonRpcId | undefined, sink: MessageSink | null) {
    super(backend, metrics);
    this.#requestId = requestId;
    this.#sink = sink;
    this.result = new Promise<CallResult>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  protected answered(head: AnswerHead): boolean {
    this.#head = head;
    return true;
  }

  protected events(events: readonly SseEvent[]): boolean {
    for (const event of events) {
      if (event.data.length === 0) continue;
      const message = parseMessage(event.data);
      if (message === null) continue;
      if (!('method' in message) && this.#requestId !== undefined && message.id === this.#requestId) this.#response = message;
      else this.#sink?.(message, event.id);
    }
    return true;
  }

  protected streamEnded(): void {
    this.#settle('');
  }

  protected bodyRead(body: Buffer): void {
    const text = body.length === 0 ? '' : body.toString('utf8');
    if (text !== '') {
      const message = parseMessage(text);
      if (message !== null && !('method' in message) && message.id === this.#requestId) this.#response = message;
    }
    this.#settle(text);
  }

  #settle(text: string): void {
    const head = this.#head!;
    this.#resolve({ status: head.status, sessionId: head.sessionId, response: this.#response, text, bytes: this.answerBytes });
  }

  protected fail(error: GatewayError): void {
    this.#reject(error);
  }

  /** The client the call was sent for went away (CallTiming.started): the backend exchange stops, and the call fails. */
  abandon(): void {
    this.#reject(new GatewayError('internal_error', 'the client went away'));
    this.cancel();
  }
}

export class BackendLink {
  readonly index: number;
  readonly backend: BackendInfo;
  /** Requests (POST, DELETE). */
  readonly requests: BackendTransport;
  /** GET streams: connections apart from the requests', so that streams never starve them. */
  readonly streams: BackendTransport;
  readonly metrics: BackendMetrics;
  readonly #hooks: BackendHook[] | null;
  readonly #hops: HopMark;

  constructor(index: number, backend: BackendInfo, upstreams: Upstreams, metrics: BackendMetrics, chain: Chain) {
    this.index = index;
    this.backend = backend;
    this.requests = upstreams.requests(backend);
    this.streams = upstreams.streams(backend);
    this.#hops = upstreams.hops;
    this.metrics = metrics;
    this.#hooks = chain.compileBackend(backend);
  }

  get name(): string {
    return this.backend.name;
  }

  /**
   * The headers of a request on `session`, after the backend's prepareBackend hooks (outgoing
   * credentials). `ctx` is null for the gateway's own requests (health checks): no hooks run then.
   */
  headers(ctx: Context | null, session: BackendSessionRecord | null, accept: string, lastEventId?: string, message?: JsonRpcMessage): string[] | GatewayError | Promise<string[] | GatewayError> {
    const list = ['accept', accept];
    if (session !== null) {
      list.push('mcp-protocol-version', session.protocolVersion);
      if (session.sessionId !== null) list.push('mcp-session-id', session.sessionId);
      // A modern backend routes on the standard headers, which must describe the body.
      else if (message !== undefined && isModernVersion(session.protocolVersion)) list.push(...standardHeaders(message));
    }
    if (lastEventId !== undefined) list.push('last-event-id', lastEventId);
    // The gateway's own requests (health checks, era probes) say so, and carry no credential.
    if (ctx === null) {
      list.push('user-agent', GATEWAY_USER_AGENT, 'via', this.#hops.entry);
      return list;
    }
    // The client request's Via and this gateway's entry: a backend URL that leads back here is refused there (hop-mark.ts).
    // The request id, which differs every time, last: the head's lines before it are the last request's (head-memo.ts).
    list.push('via', this.#hops.via(ctx.head.via));
    passAllowed(list, ctx.head, this.backend.passthroughHeaders);
    list.push('x-request-id', ctx.requestId);
    if (this.#hooks === null) return list;
    const at = list.length - 2;
    const headers = new OutgoingHeaders(list);
    const outcome = runHooks(this.#hooks, ctx, headers);
    // Sync while the hooks are: the routed hot path meets no promise here.
    if (!isPromise(outcome)) return this.#hooked(outcome, headers, at);
    return outcome.then(
      (settled) => this.#hooked(settled, headers, at),
      // A hook that rejects with a GatewayError answers with it, as one that returns it.
      (err: unknown) => {
        if (err instanceof GatewayError) return err;
        throw err;
      },
    );
  }

  /** What the hooks decided; passed, the list with the request id, put at `at`, last again (a credential a hook set comes before it). */
  #hooked(outcome: HookOutcome, headers: OutgoingHeaders, at: number): string[] | GatewayError {
    if (outcome instanceof GatewayError) return outcome;
    if (outcome !== undefined) return new GatewayError('forbidden', `backend "${this.name}" refused by a plugin`, { status: 403 });
    moveLast(headers.list, at, 'x-request-id');
    return headers.list;
  }

  /**
   * Sends one JSON-RPC message and collects the answer. On a modern backend's record the message
   * carries `envelope` in its `_meta` (towardModern), on a legacy one no modern envelope.
   */
  async call(
    ctx: Context | null,
    session: BackendSessionRecord | null,
    message: JsonRpcMessage,
    sink: MessageSink | null = null,
    envelope: ClientEnvelope = GATEWAY_ENVELOPE,
    timing: CallTiming = GATEWAY_CALL,
  ): Promise<CallResult> {
    const sent = session === null ? message : forBackend(message, session, envelope);
    const headers = await this.headers(ctx, session, 'application/json, text/event-stream', undefined, sent);
    if (headers instanceof GatewayError) throw headers;
    headers.push('content-type', 'application/json');
    const call = new BackendCall(this.backend, this.metrics, 'id' in message && 'method' in message ? message.id : undefined, sink);
    if (timing !== GATEWAY_CALL) timing.started?.(call);
    call.dispatch(this.requests, 'POST', headers, Buffer.from(JSON.stringify(sent)), timing === GATEWAY_CALL ? this.backend.answerTimeoutMs : 0);
    return call.result;
  }

  /** Ends the backend session (DELETE); failures are the backend's business. */
  async remove(ctx: Context | null, session: BackendSessionRecord): Promise<number> {
    if (session.sessionId === null) return 204;
    const headers = await this.headers(ctx, session, 'application/json, text/event-stream');
    if (headers instanceof GatewayError) throw headers;
    const call = new BackendCall(this.backend, this.metrics, undefined, null);
    call.dispatch(this.requests, 'DELETE', headers, null, this.backend.answerTimeoutMs);
    return (await call.result).status;
  }

  /** What `result`, the answer to a request on `session`, says about that session (see `sessionVerdict`). */
  sessionVerdict(session: BackendSessionRecord | null, result: CallResult): SessionVerdict {
    return session === null || session.sessionId === null ? 'kept' : sessionVerdict(result.status, result.response);
  }

  /**
   * Whether the backend still knows `session`, asked with a ping on it (MCP requires every server
   * to answer one): a JSON-RPC answer to the ping in a 2xx says yes, unless it is the same session
   * error again (a server that says "Session not found" in a 2xx says it to the ping too); a
   * refusal, or no answer at all, says no. On `ctx`'s credentials, as the request that raised the
   * question.
   */
  async stillKnows(ctx: Context | null, session: BackendSessionRecord): Promise<boolean> {
    try {
      const result = await this.call(ctx, session, { jsonrpc: '2.0', id: PROBE_ID, method: 'ping' });
      return result.status >= 200 && result.status < 300 && result.response !== null && sessionVerdict(result.status, result.response) === 'kept';
    } catch {
      return false;
    }
  }

  /** A failure of `result` as the client should see it, naming this backend; null when it is a success. */
  problem(result: CallResult, what: string): GatewayError | null {
    // An initialize names no session: its 404 (or 405) says the URL is not an MCP endpoint.
    if (what === 'initialize' && (result.status === 404 || result.status === 405) && result.response === null) {
      const detail = result.text.length > 200 ? result.text.slice(0, 200) + '…' : result.text;
      return new GatewayError(
        'backend_error',
        `backend "${this.name}" at ${this.backend.url.href} answered HTTP ${result.status} to initialize, not as an MCP server: check its URL (MCP servers usually serve /mcp)`,
        { detail, extra: { backend: this.name } },
      );
    }
    if (result.status === 508 && result.response === null) {
      // A gateway's loop guard (http/hop-mark.ts): this backend's URL leads back to a gateway the request already passed.
      return new GatewayError('backend_error', `backend "${this.name}" at ${this.backend.url.href} answered 508 Loop Detected to ${what}: its URL leads back to this gateway (or to a gateway the request already passed), so it is not called through itself`, {
        detail: result.text.slice(0, 200),
        extra: { backend: this.name },
      });
    }
    if (result.status === 404 && result.response === null) {
      return new GatewayError('session_not_found', `backend "${this.name}" no longer knows this session`, { status: 404, extra: { backend: this.name } });
    }
    if (result.status >= 400 && result.response === null) {
      const detail = result.text.length > 200 ? result.text.slice(0, 200) + '…' : result.text;
      return new GatewayError('backend_error', `backend "${this.name}" refused ${what} (HTTP ${result.status})`, { detail, extra: { backend: this.name } });
    }
    return null;
  }
}

/**
 * How long a call may take. The gateway's own calls (initialize, lists, discovery, fan-out: the
 * default, GATEWAY_CALL) end within the backend's `answerTimeoutMs`, whole answer included. A
 * client's own call that the gateway sends on its behalf (a tool call relayed round by round) may
 * run as long as its client waits: it is not timed, and `started` gets it, to abandon it when that
 * client leaves.
 */
export interface CallTiming {
  readonly started?: (call: AbandonableCall) => void;
}

/** A call in flight whose client may leave: `abandon` stops it at the backend and fails it. */
export interface AbandonableCall {
  abandon(): void;
}

/** The default timing: the whole answer within the backend's `answerTimeoutMs`. */
export const GATEWAY_CALL: CallTiming = {};

/** The User-Agent of the gateway's own requests to backends (no client's request behind them). */
export const GATEWAY_USER_AGENT = `gatehouse/${GATEHOUSE_VERSION} (health check)`;

/** The gateway speaking for itself (health checks, probes): no capabilities, its own name. */
export const GATEWAY_ENVELOPE: ClientEnvelope = { capabilities: {}, clientInfo: { name: 'gatehouse', version: GATEHOUSE_VERSION }, logLevel: null };

/** `message` as the backend of `record` gets it: with the modern envelope, or without it. */
export function forBackend(message: JsonRpcMessage, record: BackendSessionRecord, envelope: ClientEnvelope): JsonRpcMessage {
  return isModernVersion(record.protocolVersion) ? towardModern(message, envelope, record.protocolVersion) : towardLegacy(message);
}

/**
 * Whether `err` says the caller's own credentials cannot reach a backend (a prepareBackend hook's
 * 401: the token exchange service refused the caller's token, the login holds no upstream token
 * any more). Only the client can fix that, by logging in again: the whole request answers with
 * it (with the challenge), whatever the other backends did, and the backend is not held absent.
 */
export function callerMustReauthenticate(err: unknown): err is GatewayError {
  return err instanceof GatewayError && err.status === 401;
}

/** The first caller-must-reauthenticate failure among settled calls to several backends, if any. */
export function reauthenticationAmong(settled: readonly PromiseSettledResult<unknown>[]): GatewayError | undefined {
  for (const outcome of settled) if (outcome.status === 'rejected' && callerMustReauthenticate(outcome.reason)) return outcome.reason;
  return undefined;
}
