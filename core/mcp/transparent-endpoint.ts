/**
 * Transparent mode: a group of ONE backend. The gateway forwards POST, GET (the standalone SSE
 * stream) and DELETE to the backend and pipes the answer back; the backend's own session id,
 * protocol version and event ids pass through untouched. This is the fastest path: a POST is
 * read, checked and dispatched without a promise unless a plugin hook is asynchronous.
 *
 * That holds while the client speaks the backend's generation of MCP. A request of the other
 * one (a 2026-07-28 client in front of a 2025 backend, or a 2025 client in front of a backend
 * that speaks 2026-07-28) goes to the bridge instead (aggregate/era-bridge.ts): the session
 * machinery of a group of this one backend, which speaks to each side in its own era (sessions,
 * envelopes, requests for input).
 *
 * Within a session, what the client sent first is in place at the backend first: a request that
 * follows the session's GET stream is forwarded once that stream is established at the backend
 * (stream-openings.ts), so a server that asks on its stream finds it there.
 */
import { Buffer } from 'node:buffer';
import type { BackendInfo } from '../plugin-api/backend.ts';
import { runHooks, type Chain, type HookOutcome } from '../server/chain.ts';
import type { Context } from '../plugin-api/context.ts';
import { GatewayError } from '../base/errors.ts';
import { discardBody, startReading, type BodySink } from '../http/body.ts';
import { moveLast, removeHeader } from '../base/header-list.ts';
import { passIdentity } from '../http/passthrough-headers.ts';
import type { BackendMetrics } from '../observe/metrics.ts';
import { OutgoingHeaders } from '../plugin-api/outgoing-headers.ts';
import type { HopMark } from '../http/hop-mark.ts';
import type { BackendHook, ResponseHook } from '../plugin-api/plugin.ts';
import { respondWhenSettled } from '../server/respond.ts';
import type { BackendTransport } from '../upstream/transport.ts';
import type { Upstreams } from '../upstream/upstreams.ts';
import { StreamOpenings, type StreamOpening } from '../upstream/stream-openings.ts';
import type { Era } from '../protocol/era.ts';
import { methodNotAllowed, modernMethodNotAllowed, type McpEndpoint } from '../server/mcp-endpoint.ts';
import { acceptMessages, checkPostHead, directTarget, runMessageHooks } from './intake.ts';
import { PipeExchange } from './pipe.ts';
import { RewriteExchange } from './rewrite.ts';
import type { SessionOwners } from './session-owners.ts';
import type { OpenStreams } from './streams.ts';
import { isPromise, then } from '../base/thenable.ts';
import { Reply } from '../plugin-api/reply.ts';
import type { JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.ts';
import { rateLimitedError, rateLimitedResponse, type RateLimited, type RateLimits } from './rate-limits.ts';

/** What a transparent endpoint needs of the bridge that serves the requests of the other era. */
export interface EraBridge {
  /** The backend's era: at once when known, else after a probe (null: unknown, the backend unreachable). */
  backendEra(ctx: Context): Era | null | Promise<Era | null>;
  /** Serves a POST whose body is read and framed already. */
  handleParsed(ctx: Context): void;
  /** A GET stream or DELETE of a session the bridge holds. */
  streamOrEnd(ctx: Context): HookOutcome | Promise<HookOutcome>;
  /** The `/status` document's backends (with their health). */
  status(): { backends: unknown };
}

export interface TransparentOptions {
  path: string;
  /** Serves the requests whose era is not the backend's (null: everything passes through). */
  bridge: EraBridge | null;
  backend: BackendInfo;
  upstreams: Upstreams;
  chain: Chain;
  metrics: BackendMetrics;
  streams: OpenStreams;
  maxBodyBytes: number;
  /** Who opened each session (null: nothing bound nor checked, as in tests of the endpoint alone). */
  owners?: SessionOwners | null;
  /** `spec.config.rateLimiting` (null or unset: none). */
  limits?: RateLimits | null;
}

/** The errors of the calls of a batch the rate limits refused, added to the backend's answer to the rest. */
const refusedInBatch = new WeakMap<Context, JsonRpcResponse[]>();

export class TransparentEndpoint implements McpEndpoint, BodySink<Context> {
  readonly path: string;
  readonly #backend: BackendInfo;
  readonly #requests: BackendTransport;
  /** GET streams: connections apart from the requests', so that streams never starve them. */
  readonly #streamTransport: BackendTransport;
  readonly #chain: Chain;
  readonly #metrics: BackendMetrics;
  readonly #streams: OpenStreams;
  readonly #maxBodyBytes: number;
  readonly #backendHooks: BackendHook[] | null;
  readonly #bridge: EraBridge | null;
  /** GET streams on their way to the backend, by session id: the session's later requests wait for them. */
  readonly #openings = new StreamOpenings<string>();
  readonly #owners: SessionOwners | null;
  readonly #hops: HopMark;
  readonly #limits: RateLimits | null;

  constructor(options: TransparentOptions) {
    this.path = options.path;
    this.#bridge = options.bridge;
    this.#backend = options.backend;
    this.#requests = options.upstreams.requests(options.backend);
    this.#streamTransport = options.upstreams.streams(options.backend);
    this.#chain = options.chain;
    this.#metrics = options.metrics;
    this.#streams = options.streams;
    this.#maxBodyBytes = options.maxBodyBytes;
    this.#backendHooks = options.chain.compileBackend(options.backend);
    this.#owners = options.owners ?? null;
    this.#hops = options.upstreams.hops;
    this.#limits = options.limits ?? null;
  }

  handle(ctx: Context): HookOutcome | Promise<HookOutcome> {
    switch (ctx.req.method) {
      case 'POST':
        checkPostHead(ctx, this.#maxBodyBytes);
        startReading(ctx.req, this.#maxBodyBytes, this, ctx);
        return undefined;
      case 'GET':
      case 'DELETE': {
        // Not forwarded: a body sent with them is dropped as it arrives.
        if (ctx.head.hasBody) discardBody(ctx.req, this.#maxBodyBytes);
        const refused = modernMethodNotAllowed(ctx);
        if (refused !== null) throw refused;
        // A legacy stream or session end: the backend's own, unless the bridge holds legacy sessions for a modern backend.
        const era = this.#bridge?.backendEra(ctx) ?? null;
        if (isPromise(era)) return era.then((settled) => (settled === 'modern' ? this.#bridge!.streamOrEnd(ctx) : this.#forwardOwned(ctx)));
        return era === 'modern' ? this.#bridge!.streamOrEnd(ctx) : this.#forwardOwned(ctx);
      }
      default:
        throw methodNotAllowed(ctx);
    }
  }

  /** The POST body arrived: frame it, then pass it through, or across eras through the bridge. */
  body(ctx: Context, body: Buffer): void {
    try {
      acceptMessages(ctx, body);
      const era = this.#bridge?.backendEra(ctx) ?? null;
      if (isPromise(era)) {
        era.then((settled) => this.#eraKnown(ctx, body, settled)).catch((err: unknown) => ctx.fail(err));
        return;
      }
      this.#eraKnown(ctx, body, era);
    } catch (err) {
      ctx.fail(err);
    }
  }

  /** The backend's era is known (null: unknown, the request is tried as it is). */
  #eraKnown(ctx: Context, body: Buffer, era: Era | null): void {
    if (era !== null && (era === 'modern') !== (ctx.envelope !== null)) {
      this.#bridge!.handleParsed(ctx);
      return;
    }
    this.#passThrough(ctx, body);
  }

  /** A GET stream or DELETE of the backend's own session: the principal's session only (session-owners.ts). */
  #forwardOwned(ctx: Context): HookOutcome | Promise<HookOutcome> {
    const refused = this.#owners === null ? undefined : this.#owners.check(ctx);
    if (refused === undefined) return this.#forwardStreamOrEnd(ctx);
    if (isPromise(refused)) return refused.then((settled) => (settled === undefined ? this.#forwardStreamOrEnd(ctx) : settled));
    return refused;
  }

  /** Same era on both sides: the principal's session only (session-owners.ts), then as #passOwned. */
  #passThrough(ctx: Context, body: Buffer): void {
    const refused = this.#owners === null ? undefined : this.#owners.check(ctx);
    if (refused === undefined) this.#passOwned(ctx, body);
    else if (isPromise(refused)) refused.then((settled) => (settled === undefined ? this.#passOwned(ctx, body) : ctx.fail(settled))).catch((err: unknown) => ctx.fail(err));
    else ctx.fail(refused);
  }

  /**
   * The rate limits (rate-limits.ts), then as #passAdmitted. A single call refused is answered
   * 429 with Retry-After and a JSON-RPC error body; in a batch, each refused call gets its error
   * and the rest goes to the backend (#passBatch).
   */
  #passOwned(ctx: Context, body: Buffer): void {
    const limits = this.#limits;
    if (limits === null) return this.#passAdmitted(ctx, body);
    try {
      const message = ctx.message!;
      const backend = this.#backend.name;
      const outcome = Array.isArray(message) ? limits.checkBatch(ctx, message, backend) : limits.check(ctx, message, backend);
      if (isPromise(outcome)) outcome.then((settled) => this.#afterLimits(ctx, body, settled)).catch((err: unknown) => ctx.fail(err));
      else this.#afterLimits(ctx, body, outcome);
    } catch (err) {
      ctx.fail(err);
    }
  }

  #afterLimits(ctx: Context, body: Buffer, outcome: RateLimited | null | (RateLimited | null)[]): void {
    if (outcome === null) this.#passAdmitted(ctx, body);
    else if (Array.isArray(outcome)) this.#passBatch(ctx, body, outcome);
    else ctx.fail(rateLimitedError(outcome));
  }

  /**
   * A batch of which some calls were refused: nothing refused, it goes as it came; everything,
   * the client gets 429 with each message's error; else the rest goes to the backend and the
   * refused calls' errors are added to its answer (rewrite.ts).
   */
  #passBatch(ctx: Context, body: Buffer, outcomes: readonly (RateLimited | null)[]): void {
    const batch = ctx.message as JsonRpcMessage[];
    const refused: JsonRpcResponse[] = [];
    const kept: JsonRpcMessage[] = [];
    let retryAfter = 0;
    batch.forEach((message, i) => {
      const limited = outcomes[i] ?? null;
      if (limited === null) kept.push(message);
      else if ('id' in message) {
        refused.push(rateLimitedResponse(message.id, limited));
        retryAfter = Math.max(retryAfter, limited.retryAfterSeconds);
      } // else a call sent as a notification: not forwarded, and answered nothing
    });
    if (kept.length === batch.length) return this.#passAdmitted(ctx, body);
    if (kept.length === 0) return respondWhenSettled(ctx, refused.length === 0 ? Reply.empty(202) : Reply.json(429, refused, { 'retry-after': String(retryAfter) }));
    // The backend gets the rest, written anew (#forward serializes a replaced message).
    ctx.message = kept;
    ctx.body = null;
    if (refused.length > 0) refusedInBatch.set(ctx, refused);
    this.#passAdmitted(ctx, body);
  }

  /** The message hooks, then the backend. */
  #passAdmitted(ctx: Context, body: Buffer): void {
    try {
      if (this.#chain.seesMessages || ctx.scope.accessLog === true) ctx.target = directTarget(this.#backend.name, ctx.message);
      const outcome = runMessageHooks(ctx, this.#chain);
      // With message hooks or rate limits, the backend gets the message they read written anew,
      // not the client's bytes: a key sent twice is read last-wins here but first-wins by some
      // parsers (`"name":"limited","name":"free"`). The usual case, neither: the client's bytes,
      // at once, without a promise.
      if (outcome === undefined) respondWhenSettled(ctx, this.#forward(ctx, 'POST', this.#chain.seesMessages || this.#limits !== null ? serialize(ctx) : body));
      else respondWhenSettled(ctx, then(outcome, (settled) => (settled !== undefined ? settled : this.#forward(ctx, 'POST', serialize(ctx)))));
    } catch (err) {
      ctx.fail(err);
    }
  }

  bodyFailed(ctx: Context, error: GatewayError): void {
    ctx.fail(error);
  }

  /**
   * A GET stream or a DELETE, forwarded. A GET of a session is an opening until the backend
   * answers it: settled by its exchange, or here when it never gets one (a hook answered, or threw).
   */
  #forwardStreamOrEnd(ctx: Context): HookOutcome | Promise<HookOutcome> {
    const id = ctx.head.sessionId;
    if (ctx.req.method !== 'GET' || id === undefined) return this.#forward(ctx, ctx.req.method!, null, null);
    const opening = this.#openings.begin(id);
    let outcome: HookOutcome | Promise<HookOutcome>;
    try {
      outcome = this.#forward(ctx, 'GET', null, opening);
    } catch (err) {
      opening.settle();
      throw err;
    }
    if (!isPromise(outcome)) {
      if (outcome !== undefined) opening.settle();
      return outcome;
    }
    return outcome.then(
      (settled) => {
        if (settled !== undefined) opening.settle();
        return settled;
      },
      (err: unknown) => {
        opening.settle();
        throw err;
      },
    );
  }

  #forward(ctx: Context, method: string, body: Buffer | null, opening: StreamOpening | null = null): HookOutcome | Promise<HookOutcome> {
    if (body !== null && ctx.body === null) {
      // A hook replaced the message: it goes out, and is described, as replaced.
      body = serialize(ctx);
      ctx.target = directTarget(this.#backend.name, ctx.message);
    }
    const responseHooks = method === 'POST' ? this.#chain.responseHooks(ctx.rpcMethod) : null;
    const list = ctx.head.forward;
    passIdentity(list, ctx.head, this.#backend.passthroughHeaders);
    // The gateway reads the body itself: a hooked answer, a batch's answer that the errors of its
    // refused calls join, or a GET stream while hooks exist (#send).
    if (responseHooks !== null || refusedInBatch.has(ctx) || (method === 'GET' && this.#chain.hasResponseHooks)) removeHeader(list, 'accept-encoding');
    // The client's Via and this gateway's entry: a backend URL that leads back here is refused there (hop-mark.ts).
    // The request id, which differs every time, after it: the head's lines before it are the last request's (head-memo.ts).
    list.push('via', this.#hops.via(ctx.head.via), 'x-request-id', ctx.requestId);
    if (this.#backendHooks !== null) {
      const at = list.length - 2;
      const headers = new OutgoingHeaders(list);
      const outcome = runHooks(this.#backendHooks, ctx, headers);
      // Written out, not passed to then(): no closure on the sync path.
      if (isPromise(outcome)) return outcome.then((settled) => (settled !== undefined ? settled : this.#sendHooked(ctx, method, headers.list, at, body, responseHooks, opening)));
      if (outcome !== undefined) return outcome;
      return this.#sendHooked(ctx, method, headers.list, at, body, responseHooks, opening);
    }
    return this.#send(ctx, method, list, body, responseHooks, opening);
  }

  /** #send once the backend hooks passed: the request id, put at `at`, goes last again (a credential a hook set comes before it). */
  #sendHooked(ctx: Context, method: string, headers: string[], at: number, body: Buffer | null, responseHooks: ResponseHook[] | null, opening: StreamOpening | null): undefined {
    moveLast(headers, at, 'x-request-id');
    return this.#send(ctx, method, headers, body, responseHooks, opening);
  }

  /** Sends now, or, when the session's GET stream is still on its way to the backend, once it is there. */
  #send(ctx: Context, method: string, headers: string[], body: Buffer | null, responseHooks: ResponseHook[] | null, opening: StreamOpening | null): undefined {
    const id = ctx.head.sessionId;
    const awaited = this.#openings.none || opening !== null || id === undefined ? null : this.#openings.awaited(id);
    if (awaited === null) return this.#dispatch(ctx, method, headers, body, responseHooks, opening);
    awaited.then(() => this.#dispatch(ctx, method, headers, body, responseHooks, null)).catch((err: unknown) => ctx.fail(err));
    return undefined;
  }

  #dispatch(ctx: Context, method: string, headers: string[], body: Buffer | null, responseHooks: ResponseHook[] | null, opening: StreamOpening | null): undefined {
    if (ctx.res.destroyed) {
      // The client left while hooks ran (or while the session's stream opened).
      opening?.settle();
      return undefined;
    }
    const stream = method === 'GET';
    // With onResponse hooks anywhere, a GET stream is read too: a response replayed on it
    // (Last-Event-ID) cannot pass its method's hooks, so it must not pass at all.
    const refused = refusedInBatch.get(ctx) ?? null;
    const exchange =
      responseHooks !== null || refused !== null
        ? new RewriteExchange(ctx, this.#backend, this.#metrics, this.#streams, responseHooks ?? [])
        : stream && this.#chain.hasResponseHooks
          ? new RewriteExchange(ctx, this.#backend, this.#metrics, this.#streams, [], true)
          : new PipeExchange(ctx, this.#backend, this.#metrics, this.#streams, stream);
    exchange.opening = opening;
    if (refused !== null) (exchange as RewriteExchange).refused = refused;
    // An authenticated initialize (its answer names the new session's id) or DELETE: its answer binds or unbinds the id.
    // An id a backend gives out on any other answer is bound to no one: the gateway answers it 404.
    if (this.#owners !== null && ctx.principal !== null && (method === 'DELETE' || (ctx.rpcMethod === 'initialize' && ctx.head.sessionId === undefined))) exchange.owners = this.#owners;
    exchange.dispatch(stream ? this.#streamTransport : this.#requests, method, headers, body);
    return undefined;
  }

  async close(): Promise<void> {
    // Streams are closed by the server; the pool by the upstreams owner; the bridge by its owner.
    this.#openings.settleAll();
  }

  status(): unknown {
    return { mode: 'transparent', backends: this.#bridge?.status().backends ?? [{ name: this.#backend.name, url: this.#backend.url.href }] };
  }
}

function serialize(ctx: Context): Buffer {
  return Buffer.from(JSON.stringify(ctx.message));
}
