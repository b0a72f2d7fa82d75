/**
 * Aggregated mode: one MCP endpoint in front of a group of backends. The gateway owns the
 * client's session (its own random Mcp-Session-Id) and holds one session per backend.
 *
 * A POST is, in order: read and checked (intake.ts), its session found (this process's cache,
 * else the shared store), its target resolved (ctx.target: which backend, under which name),
 * its onMessage hooks run on the message as the client sent it, then by kind:
 *   initialize            → every backend initialized in parallel, capabilities merged (init.ts)
 *   lists                 → merged across backends, cached per session, paged (lists.ts)
 *   tools/call, prompts/get, resources/*, completion/complete, tasks/*
 *                         → routed to the owning backend, its answer streamed back (routed.ts)
 *   ping, logging/setLevel → answered here / sent to every backend
 *   client notifications  → to every backend (cancellations: to the request's backend)
 *   client responses      → to the backend that asked (the id says which, ids.ts)
 * GET opens the multiplexed stream (client-stream.ts); DELETE ends every backend session.
 * Every JSON-RPC response the client gets, built here or routed, passes the onResponse hooks of
 * its method. Backends that restart, go down or come back are healed into the session
 * (healing.ts).
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { runHooks, type Chain, type HookOutcome } from '../../chain.ts';
import type { Context } from '../../context.ts';
import { randomBytes } from 'node:crypto';
import { GatewayError, rpcErrorResponse, untrusted } from '../../errors.ts';
import { discardBody, startReading, type BodySink } from '../../http/body.ts';
import { Reply } from '../../reply.ts';
import { respond, respondWhenSettled } from '../../respond.ts';
import { runResponseHooks } from '../../chain.ts';
import type { MessageTarget } from '../../context.ts';
import { methodNotAllowed, modernMethodNotAllowed, type McpEndpoint } from '../mcp-endpoint.ts';
import { acceptMessages, checkPostHead, directTarget, runMessageHooks } from '../intake.ts';
import { isModernVersion } from '../era.ts';
import type { JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../jsonrpc.ts';
import type { OpenStreams } from '../streams.ts';
import { callerMustReauthenticate, forBackend, type BackendLink, type MessageSink } from './backend-link.ts';
import type { BackendSessionRecord } from './session-store.ts';
import { ClientStream, streamRefusal } from './client-stream.ts';
import { parseFilter } from './listen.ts';
import type { AggregationConfig, FailureHandlingConfig, SessionConfig } from './config.ts';
import type { HealthMonitor } from './health.ts';
import { parseEventId, unwrapInputRequestId, unwrapRequestId } from './ids.ts';
import { InputWaits, relayInput } from './input-relay.ts';
import { isGatewayState, MAX_PARKED_PER_BACKEND, MAX_PARKED_PER_PRINCIPAL, ParkedCalls } from './parked-calls.ts';
import { replicaOf, type Relay, type RelayMessage } from './relay.ts';
import { relayedContext, RemoteAnswers } from './remote-resume.ts';
import { ResumeTickets } from './resume-tickets.ts';
import { SessionHealer } from './healing.ts';
import { clientCapabilities as declaredCapabilities, clientInfo as declaredClientInfo, clientLogLevel } from './declarations.ts';
import { implicitSessionId } from './implicit-session.ts';
import { initializeSession, reasonOf, type InitOptions } from './init.ts';
import { hintsOf, isFresh, loadList, page, pageText, resourceOwner, type ListCache } from './lists.ts';
import { mcpMethod, type ListKind } from '../methods.ts';
import { completed, discoverResult, serverInfo, withCacheHints } from './modern-answers.ts';
import { LEGACY_VERSIONS, META, UNNAMED_CLIENT, type ClientEnvelope, type Era } from '../era.ts';
import { InputStream, type InputStreamOwner } from './input-stream.ts';
import { RoutedExchange, type RouteListener } from './routed.ts';
import { AggregatedSession, MAX_SUBSCRIPTIONS_PER_BACKEND } from './session.ts';
import { ownedBy, ownerKey, sessionTag, type SessionRecord, type SessionStore } from './session-store.ts';
import { isPromise } from '../../thenable.ts';
import { prefixFor } from './config.ts';

export interface AggregatedOptions {
  path: string;
  /** `metadata.name` of the VirtualMCPServer (the serverInfo name clients see). */
  name: string;
  links: readonly BackendLink[];
  chain: Chain;
  streams: OpenStreams;
  maxBodyBytes: number;
  aggregation: AggregationConfig;
  session: SessionConfig;
  failure: FailureHandlingConfig;
  store: SessionStore;
  health: HealthMonitor;
  /** How this replica tells the others about what it holds (relay.ts): started already. */
  relay: Relay;
  log: Logger;
  /**
   * The endpoint is a transparent endpoint's era bridge: one backend under its own names. A
   * request naming a tool, prompt or resource goes to it without looking the name up in its
   * lists, as on the transparent path (the backend answers for what it lacks).
   */
  direct?: boolean;
  /** Backends a config reload removed (sessions may still call their tools): named when one is called. */
  removedBackends?: readonly string[];
}

/** Whether a direct bridge sends `method` to its backend as the client named its subject (ctx.target as the transparent path's). */
function sentAsNamed(method: string): boolean {
  const entry = mcpMethod(method);
  return entry !== undefined && entry.routed && entry.subject !== null;
}

/** What a parked call is about, as its requestState binds it: the backend and that backend's name of the tool. */
function targetKey(ctx: Context): string {
  return `${ctx.target?.backend ?? ''}\n${ctx.target?.name ?? ''}`;
}

/** The answers a modern client's retry carries (`inputResponses`), or none. */
function inputResponsesOf(request: JsonRpcRequest): Record<string, unknown> {
  const given = request.params?.['inputResponses'];
  return typeof given === 'object' && given !== null && !Array.isArray(given) ? (given as Record<string, unknown>) : {};
}

/** How long a call waits for the backend to open the stream its requests for input may come on. */
const HOLD_STREAM_WAIT_MS = 1_000;
/** How long a backend that refused that stream is not asked again. */
const HOLD_STREAM_RETRY_MS = 30_000;

/** Whether a call may be asked for input by a legacy backend on its session's stream: a modern client's, which declared it can be asked. */
function mayBeAsked(ctx: Context, session: AggregatedSession, backend: BackendSessionRecord): boolean {
  const capabilities = ctx.envelope?.capabilities;
  if (capabilities === undefined || (capabilities['elicitation'] === undefined && capabilities['sampling'] === undefined && capabilities['roots'] === undefined)) return false;
  return session.record.modern === true && backend.sessionId !== null && !isModernVersion(backend.protocolVersion) && mcpMethod(ctx.rpcMethod ?? '')?.askable === true;
}

/** `promise`, or after `ms` whatever it does. */
function waitAtMost(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

/** JSON-RPC error codes the gateway answers with itself. */
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const RESOURCE_NOT_FOUND = -32002;
/** subscriptions/listen streams one principal may hold open at once (each holds a stream per backend). */
const MAX_LISTENS_PER_PRINCIPAL = 8;
/** How long a legacy backend's list stays fresh for a modern client, which hears no list_changed. */
const IMPLICIT_LIST_TTL_MS = 60_000;
/** At most this long (ms) to spread the sessions that join a recovered backend over. */
const RECOVERY_SPREAD_MAX_MS = 5_000;


function sessionNotFound(): GatewayError {
  return new GatewayError('session_not_found', 'Session not found: initialize a new session');
}

/** A routed request resolved: the backend, the request as that backend gets it, and ctx.target. */
interface Routed {
  readonly link: BackendLink;
  readonly request: JsonRpcRequest;
  readonly target: MessageTarget;
}

/** Why a routed request has no backend: the JSON-RPC error the client gets. */
interface Unrouted {
  readonly code: number;
  readonly message: string;
}

export class AggregatedEndpoint implements McpEndpoint, BodySink<Context>, RouteListener {
  readonly path: string;
  readonly #o: AggregatedOptions;
  readonly #links: ReadonlyMap<string, BackendLink>;
  /** A transparent endpoint's bridge: its one backend (null: an aggregated group). */
  readonly #direct: BackendLink | null;
  readonly #healer: SessionHealer;
  /** This process's live sessions: what the store does not hold (list caches, streams, routing). */
  readonly #local: LRUCache<string, AggregatedSession>;
  /** The `_meta` of the gateway's own results to modern clients, as JSON. */
  readonly #serverMeta: string;
  /** Requests for input asked of legacy clients on modern backends' behalf. */
  readonly #waits: InputWaits;
  /** Open subscriptions/listen streams per principal (its owner key; '' for anonymous). */
  readonly #listens = new Map<string, number>();
  /** Modern clients' calls a legacy backend interrupted with a request, waiting for their retries. */
  readonly #parked: ParkedCalls<RoutedExchange>;
  /** Retries here of calls parked on other replicas, waiting for what those relay. */
  readonly #remote = new RemoteAnswers();
  /** Calls parked here and resumed by a retry on another replica, by resume id (the client may leave). */
  readonly #resumedElsewhere = new Map<string, RoutedExchange>();
  /** Which response a resumed request stream may carry, through any replica (RouteListener). */
  readonly tickets: ResumeTickets;

  constructor(options: AggregatedOptions) {
    this.path = options.path;
    this.#o = options;
    this.#links = new Map(options.links.map((link) => [link.name, link]));
    this.#direct = options.direct === true && options.links.length === 1 ? options.links[0]! : null;
    this.#serverMeta = JSON.stringify({ [META.serverInfo]: serverInfo(options.name) });
    this.#waits = new InputWaits(options.relay.replica);
    this.#parked = new ParkedCalls<RoutedExchange>(options.relay.key, options.relay.replica);
    this.tickets = new ResumeTickets(options.relay);
    options.relay.onMessage((message) => this.#relayed(message));
    this.#healer = new SessionHealer({ links: options.links, store: options.store, health: options.health, log: options.log, sink: (session, link) => this.#sink(session, link) });
    this.#local = new LRUCache<string, AggregatedSession>({
      max: options.session.maxSessions,
      ttl: options.session.ttlMs,
      updateAgeOnGet: true,
      dispose: (session) => session.close(),
    });
    options.health.onRecovered((name) => this.#recovered(name));
  }

  handle(ctx: Context): HookOutcome | Promise<HookOutcome> {
    switch (ctx.req.method) {
      case 'POST':
        checkPostHead(ctx, this.#o.maxBodyBytes);
        startReading(ctx.req, this.#o.maxBodyBytes, this, ctx);
        return undefined;
      case 'GET':
      case 'DELETE':
        // A body sent with them is not read: it is dropped as it arrives.
        if (ctx.head.hasBody) discardBody(ctx.req, this.#o.maxBodyBytes);
        return modernMethodNotAllowed(ctx) ?? (ctx.req.method === 'GET' ? this.#stream(ctx) : this.#delete(ctx));
      default:
        throw methodNotAllowed(ctx);
    }
  }

  body(ctx: Context, body: Buffer): void {
    try {
      acceptMessages(ctx, body);
      this.handleParsed(ctx);
    } catch (err) {
      ctx.fail(err);
    }
  }

  /**
   * A POST whose body was read and framed already (by a transparent endpoint that bridges
   * eras through this one, see transparent-endpoint.ts): served from here on as any other.
   */
  handleParsed(ctx: Context): void {
    try {
      if (Array.isArray(ctx.message)) {
        throw new GatewayError('invalid_jsonrpc', 'Invalid Request: JSON-RPC batches are not supported by an aggregated server (MCP 2025-06-18 removed them)');
      }
      respondWhenSettled(ctx, this.#dispatch(ctx, ctx.message!));
    } catch (err) {
      ctx.fail(err);
    }
  }

  bodyFailed(ctx: Context, error: GatewayError): void {
    ctx.fail(error);
  }

  /**
   * The era of the group's first backend, for a transparent endpoint bridging through this one:
   * at once when it is known, else after a probe (an unreachable backend: unknown, null).
   */
  backendEra(ctx: Context): Era | null | Promise<Era | null> {
    const link = this.#o.links[0]!;
    const known = this.#o.health.profiles.get(link);
    if (known !== undefined) return known.era;
    return this.#o.health.profiles.probe(ctx, link).then(
      (profile) => profile?.era ?? null,
      () => null,
    );
  }

  // ---- sessions ----

  /**
   * The client's session. The store is asked on every request (and its TTL extended): a session
   * another process deleted must not live on here, and must never be revived by re-initializing
   * its backends. The in-memory store answers at once; Redis with one GETEX.
   */
  #session(ctx: Context): AggregatedSession | Promise<AggregatedSession> {
    const id = ctx.head.sessionId;
    if (id === undefined) throw new GatewayError('session_required', 'Bad Request: Mcp-Session-Id header is required (initialize first)');
    const record = this.#o.store.touch(id, ctx.principal);
    return isPromise(record) ? record.then((stored) => this.#adopt(ctx, id, stored)) : this.#adopt(ctx, id, record);
  }

  /** The live session of a stored record, after the owner check. */
  #adopt(ctx: Context, id: string, record: SessionRecord | null): AggregatedSession {
    if (record === null) {
      this.#local.delete(id);
      throw sessionNotFound();
    }
    // Another principal holding this id is told what a stranger is: no such session. So is a
    // legacy request naming the implicit session of a modern client (or the other way round).
    if (!ownedBy(record, ctx.principal) || (record.modern === true) !== (ctx.envelope !== null)) throw sessionNotFound();
    let session = this.#local.get(id);
    if (session === undefined || session.record.backends !== record.backends && JSON.stringify(session.record.backends) !== JSON.stringify(record.backends)) {
      // First request here, or another process re-created a backend session since.
      session?.close();
      session = new AggregatedSession(record);
      this.#local.set(id, session);
    }
    return session;
  }

  /**
   * Ends the backend sessions of a session that is over: deleted by the client, or expired or
   * evicted from the in-memory store (a shared store's expiry leaves them to the backends' own).
   */
  async endBackends(ctx: Context | null, record: SessionRecord): Promise<void> {
    this.#local.delete(record.id);
    await Promise.allSettled(Object.entries(record.backends).map(([name, backend]) => this.#links.get(name)?.remove(ctx, backend)));
  }

  // ---- POST ----

  /**
   * Session, target, onMessage hooks, then the message by kind. Each step stays synchronous while
   * it can (a session in memory, a cached list, no hook or only sync ones), so a routed call
   * meets no promise until its answer comes back.
   */
  #dispatch(ctx: Context, message: JsonRpcMessage): HookOutcome | Promise<HookOutcome> {
    if (ctx.envelope !== null) return this.#modern(ctx, message);
    if ('method' in message && 'id' in message && message.method === 'initialize') return this.#initializeHooked(ctx, message);
    const session = this.#session(ctx);
    return isPromise(session) ? session.then((found) => this.#target(ctx, found, message)) : this.#target(ctx, session, message);
  }

  /**
   * A modern client's request: it has no session, so the gateway's implicit one for this
   * principal and these capabilities serves it (implicit-session.ts), created on first use.
   */
  #modern(ctx: Context, message: JsonRpcMessage): HookOutcome | Promise<HookOutcome> {
    // 2026-07-28 defines no client notification over HTTP (a cancellation is the closed stream).
    if (!('method' in message) || !('id' in message)) return Reply.empty(202);
    if (mcpMethod(message.method)?.eras === 'legacy') {
      return this.#answer(ctx, { jsonrpc: '2.0', id: message.id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${message.method} is not part of the ${String(ctx.head.protocolVersion)} protocol` } });
    }
    // What the request declares names its implicit session, which keeps it, and goes on to the
    // backends (the modern ones with every request): bounded as an initialize's (declarations.ts).
    const envelope = ctx.envelope!;
    ctx.envelope = {
      capabilities: declaredCapabilities(envelope.capabilities, this.#o.session.maxSessionBytes, `_meta["${META.clientCapabilities}"]`),
      clientInfo: declaredClientInfo(envelope.clientInfo),
      logLevel: clientLogLevel(envelope.logLevel),
    };
    const session = this.#implicitSession(ctx);
    if (!(session instanceof AggregatedSession) && !isPromise(session)) return session;
    return isPromise(session) ? session.then((found) => (found instanceof AggregatedSession ? this.#target(ctx, found, message) : found)) : this.#target(ctx, session, message);
  }

  /** The implicit session of a modern request (created when it has none), or what the client gets instead. */
  #implicitSession(ctx: Context): AggregatedSession | HookOutcome | Promise<AggregatedSession | HookOutcome> {
    const id = implicitSessionId(ctx.principal, ctx.envelope!.capabilities);
    const record = this.#o.store.touch(id, ctx.principal);
    if (isPromise(record)) return record.then((stored) => (stored === null ? this.#createImplicit(ctx, id) : this.#adopt(ctx, id, stored)));
    return record === null ? this.#createImplicit(ctx, id) : this.#adopt(ctx, id, record);
  }

  /** Implicit sessions being created here: concurrent first requests wait for the same one. */
  readonly #creating = new Map<string, Promise<AggregatedSession | Reply>>();

  /**
   * A new implicit session opens the backends' sessions, as a legacy client's `initialize`
   * would: the onMessage hooks see that `initialize` first (synthesized from the request's
   * envelope), so a plugin that refuses a caller refuses it before any backend is asked.
   */
  async #createImplicit(ctx: Context, id: string): Promise<AggregatedSession | HookOutcome> {
    const hooks = this.#o.chain.messageHooks('initialize');
    if (hooks !== null) {
      const envelope = ctx.envelope!;
      const opening: JsonRpcRequest = { jsonrpc: '2.0', id: ctx.rpcId ?? 0, method: 'initialize', params: { protocolVersion: LEGACY_VERSIONS[0], capabilities: envelope.capabilities, clientInfo: envelope.clientInfo ?? UNNAMED_CLIENT } };
      const refused = await runHooks(hooks, ctx, opening);
      if (refused !== undefined) return refused;
    }
    return this.#openImplicit(ctx, id);
  }

  #openImplicit(ctx: Context, id: string): Promise<AggregatedSession | Reply> {
    this.#local.delete(id);
    const pending = this.#creating.get(id);
    if (pending !== undefined) return pending;
    const creating = (async (): Promise<AggregatedSession | Reply> => {
      const created = await initializeSession(ctx, ctx.message as JsonRpcRequest, this.#initOptions(), id);
      if (created instanceof Reply) return created;
      const stored = await this.#o.store.create(created.session.record);
      if (!stored.created) {
        // Another replica opened this client's implicit session meanwhile: its backend sessions
        // serve, the ones opened here end (on this request's credentials) rather than linger.
        this.#o.log.debug({ session: sessionTag(id) }, 'an implicit session was opened by another replica at the same time: ending the backend sessions opened here');
        void this.endBackends(ctx, created.session.record).catch(() => undefined);
        return this.#adopt(ctx, id, stored.existing);
      }
      for (const ended of stored.ended) void this.endBackends(null, ended);
      this.#local.set(id, created.session);
      return created.session;
    })().finally(() => this.#creating.delete(id));
    this.#creating.set(id, creating);
    return creating;
  }

  #initOptions(): InitOptions {
    return {
      name: this.#o.name,
      maxSessionBytes: this.#o.session.maxSessionBytes,
      links: this.#o.links,
      profiles: this.#o.health.profiles,
      failure: this.#o.failure,
      sink: (link) => this.#sink(null, link),
      failed: (link, err) => this.#healer.failedAlone(link, err),
      log: this.#o.log,
    };
  }

  async #initializeHooked(ctx: Context, request: JsonRpcRequest): Promise<HookOutcome> {
    // Refused before the hooks see it, as a modern request's declaration is (#modern).
    declaredCapabilities(request.params?.capabilities, this.#o.session.maxSessionBytes, 'params.capabilities');
    const hooked = await runMessageHooks(ctx, this.#o.chain);
    return hooked !== undefined ? hooked : this.#initialize(ctx, request);
  }

  #target(ctx: Context, session: AggregatedSession, message: JsonRpcMessage): HookOutcome | Promise<HookOutcome> {
    const routed = 'id' in message && 'method' in message ? (this.#direct !== null && sentAsNamed(message.method) ? this.#directRoute(message) : this.#resolve(ctx, session, message)) : null;
    return isPromise(routed) ? routed.then((resolved) => this.#hooks(ctx, session, message, resolved)) : this.#hooks(ctx, session, message, routed);
  }

  #hooks(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Routed | Unrouted | null): HookOutcome | Promise<HookOutcome> {
    if (routed !== null && 'target' in routed) ctx.target = routed.target;
    const hooked = runMessageHooks(ctx, this.#o.chain);
    if (hooked === undefined && ctx.message === message) return this.#byKind(ctx, session, message, routed);
    return this.#afterHooks(ctx, session, message, routed, hooked);
  }

  async #afterHooks(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Routed | Unrouted | null, hooked: HookOutcome | Promise<HookOutcome>): Promise<HookOutcome> {
    const settled = await hooked;
    if (settled !== undefined) return settled;
    if (ctx.message !== message) {
      // A hook replaced the message: it is routed as replaced.
      if (Array.isArray(ctx.message)) throw new GatewayError('internal_error', 'an onMessage hook replaced the message with a batch, which an aggregated server cannot route');
      message = ctx.message as JsonRpcMessage;
      routed = 'id' in message && 'method' in message ? await this.#resolve(ctx, session, message) : null;
      ctx.target = routed !== null && 'target' in routed ? routed.target : null;
    }
    return this.#byKind(ctx, session, message, routed);
  }

  #byKind(ctx: Context, session: AggregatedSession, message: JsonRpcMessage, routed: Routed | Unrouted | null): HookOutcome | Promise<HookOutcome> {
    if (!('method' in message)) return this.#answerFromClient(ctx, session, message);
    if (!('id' in message)) return this.#notify(ctx, session, message);
    if (routed === null) return this.#request(ctx, session, message);
    if ('target' in routed && (message.method === 'resources/subscribe' || message.method === 'resources/unsubscribe') && isModernVersion(session.backends.get(routed.link.name)?.protocolVersion)) {
      return this.#subscribeModern(ctx, session, routed.link, message);
    }
    if ('target' in routed) return this.#route(ctx, session, routed.link, routed.request);
    return this.#answer(ctx, { jsonrpc: '2.0', id: message.id, error: { code: routed.code, message: routed.message } });
  }

  async #initialize(ctx: Context, request: JsonRpcRequest): Promise<HookOutcome> {
    const created = await initializeSession(ctx, request, this.#initOptions());
    if (created instanceof Reply) return created;
    // One principal's many sessions end its own oldest ones, never anyone else's.
    for (const ended of await this.#o.store.save(created.session.record)) {
      this.#o.log.info({ session: sessionTag(ended.id) }, 'a principal went past maxSessionsPerPrincipal or maxSessionsSizePerPrincipal: its oldest session ended');
      void this.endBackends(null, ended);
    }
    this.#local.set(created.session.id, created.session);
    return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, result: created.result }, { 'mcp-session-id': created.session.id });
  }

  /**
   * The backend a request goes to and the request as it gets it; an Unrouted error when the
   * request names what no backend of the session serves; null for a request the gateway
   * answers itself or sends to every backend.
   */
  #resolve(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Routed | Unrouted | null | Promise<Routed | Unrouted | null> {
    const method = request.method;
    if (method !== 'tools/call' && method !== 'prompts/get') return this.#resolveOther(ctx, session, request);
    const kind = method === 'tools/call' ? 'tools' : 'prompts';
    // The usual case, a cached list and every backend joined: no promise.
    const cached = session.record.missing.length === 0 ? session.lists.get(kind) : undefined;
    if (cached !== undefined) {
      const routed = this.#resolveName(session, request, kind, cached);
      // A name a list past its freshness lacks: the backends may serve it by now.
      if (!('code' in routed) || isFresh(cached, performance.now())) return routed;
    }
    return this.#list(ctx, session, kind, cached !== undefined).then((list) => this.#resolveName(session, request, kind, list));
  }

  /** A direct bridge's request: to its one backend, as the client named it. */
  #directRoute(request: JsonRpcRequest): Routed {
    const link = this.#direct!;
    return { link, request, target: directTarget(link.name, request)! };
  }

  /** The backend of a tool or prompt the client names, and the request with the backend's own name. */
  #resolveName(session: AggregatedSession, request: JsonRpcRequest, kind: 'tools' | 'prompts', list: ListCache): Routed | Unrouted {
    const params = request.params ?? {};
    const name = params.name;
    const exposed = typeof name === 'string' ? list.names?.byName.get(name) : undefined;
    if (exposed === undefined) return this.#unknown(session, kind === 'tools' ? 'tool' : 'prompt', String(name), list);
    const sent = exposed.original === name ? request : { ...request, params: { ...params, name: exposed.original } };
    return { link: this.#links.get(exposed.backend)!, request: sent, target: { backend: exposed.backend, name: exposed.original } };
  }

  async #resolveOther(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<Routed | Unrouted | null> {
    const params = request.params ?? {};
    switch (request.method) {
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        const uri = typeof params.uri === 'string' ? params.uri : '';
        const owner = await this.#resourceOwner(ctx, session, uri);
        if (owner === null) return { code: RESOURCE_NOT_FOUND, message: `Resource not found: ${uri}` };
        return { link: owner, request, target: { backend: owner.name, name: uri } };
      }
      case 'completion/complete':
        return this.#resolveCompletion(ctx, session, request);
      case 'tasks/get':
      case 'tasks/result':
      case 'tasks/cancel': {
        const index = typeof params.taskId === 'string' ? session.tasks.get(params.taskId) : undefined;
        const link = index === undefined ? undefined : this.#o.links[index];
        if (link === undefined) return { code: INVALID_PARAMS, message: `Unknown task: ${String(params.taskId)}` };
        return { link, request, target: { backend: link.name, name: null } };
      }
      default:
        return null;
    }
  }

  /**
   * A name no backend lists: unavailable when it has the prefix of a backend that is not in the
   * session now, or whose list just failed (so the client knows to try later), unknown otherwise.
   */
  #unknown(session: AggregatedSession, what: 'tool' | 'prompt', name: string, list: ListCache | null = null): Unrouted {
    const { conflictResolution, prefixFormat } = this.#o.aggregation;
    if (conflictResolution === 'prefix') {
      for (const link of this.#o.links) {
        if (!name.startsWith(prefixFor(prefixFormat, link.name))) continue;
        const failed = list?.failures.get(link.name);
        if (session.has(link.name) && failed === undefined) continue;
        const reason = failed ?? session.absence(link.name)?.reason ?? `backend "${link.name}" is unavailable`;
        return { code: INTERNAL_ERROR, message: `${what} ${name} cannot be called now: ${reason}` };
      }
      // A session from before a reload may still call what a removed backend offered.
      for (const removed of this.#o.removedBackends ?? []) {
        if (name.startsWith(prefixFor(prefixFormat, removed))) return { code: INVALID_PARAMS, message: `Unknown ${what}: ${name} (backend "${removed}" was removed from the configuration)` };
      }
    }
    return { code: INVALID_PARAMS, message: `Unknown ${what}: ${name}` };
  }

  async #resolveCompletion(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<Routed | Unrouted> {
    const ref = (request.params?.ref ?? {}) as { type?: string; name?: string; uri?: string };
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const exposed = (await this.#list(ctx, session, 'prompts')).names?.byName.get(ref.name);
      if (exposed === undefined) return this.#unknown(session, 'prompt', ref.name);
      const routed = { ...request, params: { ...request.params, ref: { ...ref, name: exposed.original } } };
      return { link: this.#links.get(exposed.backend)!, request: routed, target: { backend: exposed.backend, name: exposed.original } };
    }
    if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const templates = await this.#list(ctx, session, 'resourceTemplates');
      const template = templates.templates?.find((t) => t.uriTemplate === ref.uri);
      const owner = template !== undefined ? this.#links.get(template.backend) : await this.#resourceOwner(ctx, session, ref.uri);
      if (owner === undefined || owner === null) return { code: INVALID_PARAMS, message: `Unknown resource template: ${ref.uri}` };
      return { link: owner, request, target: { backend: owner.name, name: ref.uri } };
    }
    return { code: INVALID_PARAMS, message: 'completion/complete needs a ref/prompt name or a ref/resource uri' };
  }

  /**
   * A modern client's `subscriptions/listen`: the stream of the change notifications its filter
   * asks for, from every backend of the session in its own era (client-stream.ts, listen.ts).
   */
  async #listen(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<HookOutcome> {
    const who = ctx.principal === null ? '' : ownerKey({ issuer: ctx.principal.issuer, subject: ctx.principal.subject });
    const open = this.#listens.get(who) ?? 0;
    if (open >= MAX_LISTENS_PER_PRINCIPAL) {
      return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: `too many subscriptions/listen streams open (at most ${MAX_LISTENS_PER_PRINCIPAL} per principal)` } });
    }
    const filter = parseFilter(request.params);
    const owned = new Map<string, string[]>();
    const subscribeHooks = this.#o.chain.messageHooks('resources/subscribe');
    for (const uri of filter.resourceSubscriptions) {
      const owner = await this.#resourceOwner(ctx, session, uri);
      if (owner === null) continue;
      // Each resource followed is a subscription: the onMessage hooks of resources/subscribe decide, as for one a client sends.
      if (subscribeHooks !== null) {
        const target = ctx.target;
        ctx.target = { backend: owner.name, name: uri };
        const refused = await runHooks(subscribeHooks, ctx, { jsonrpc: '2.0', id: request.id, method: 'resources/subscribe', params: { uri } });
        ctx.target = target;
        if (refused !== undefined) continue;
      }
      owned.set(owner.name, [...(owned.get(owner.name) ?? []), uri]);
    }
    const records = [...session.backends.values()];
    const served = (capability: string): boolean => records.some((r) => r.capabilities[capability] !== undefined);
    const honored: Record<string, unknown> = {};
    if (filter.toolsListChanged && served('tools')) honored['toolsListChanged'] = true;
    if (filter.promptsListChanged && served('prompts')) honored['promptsListChanged'] = true;
    if (filter.resourcesListChanged && served('resources')) honored['resourcesListChanged'] = true;
    const subscribed = [...owned.values()].flat();
    if (subscribed.length > 0) honored['resourceSubscriptions'] = subscribed;
    const refusal = streamRefusal(session, this.#links);
    if (refusal !== null) return refusal;
    // What this listen subscribed on legacy backends (backend name → URI → the backend session it
    // last subscribed on: a stream that reconnects to a restarted backend subscribes again): undone when it ends.
    const held = new Map<string, Map<string, BackendSessionRecord>>();
    const subscribe = (link: BackendLink, uris: readonly string[], record: BackendSessionRecord): void => {
      let mine = held.get(link.name);
      if (mine === undefined) held.set(link.name, (mine = new Map()));
      for (const uri of uris) {
        if (!mine.has(uri)) session.holdSubscription(link.name, uri);
        mine.set(uri, record);
        void this.#healer.call(ctx, session, link, { jsonrpc: '2.0', id: 'gatehouse-subscribe', method: 'resources/subscribe', params: { uri } }).catch(() => undefined);
      }
    };
    this.#listens.set(who, open + 1);
    const ended = (): void => {
      const left = (this.#listens.get(who) ?? 1) - 1;
      if (left > 0) this.#listens.set(who, left);
      else this.#listens.delete(who);
      this.#unsubscribe(ctx, session, held);
    };
    const asked = (link: BackendLink, record: BackendSessionRecord, asking: JsonRpcRequest): void => this.#streamRequest(session, link, record, ctx, asking);
    new ClientStream(ctx, session, this.#links, this.#o.streams, this.#observe, this.#healer, new Map(), { spec: { subscriptionId: request.id, filter }, honored, owned, subscribe, ended, request: asked }).open();
    return undefined;
  }

  /**
   * A listen ended (the client closed it, or the gateway did): what it subscribed on legacy
   * backends is unsubscribed there, unless another listen of the session still follows it or
   * the backend session it was made on is gone. (Its streams closed with it: a legacy backend's
   * GET stream, a modern backend's listen.) On the listen's credentials, without waiting.
   */
  #unsubscribe(ctx: Context, session: AggregatedSession, held: ReadonlyMap<string, ReadonlyMap<string, BackendSessionRecord>>): void {
    for (const [name, uris] of held) {
      const link = this.#links.get(name);
      if (link === undefined) continue;
      for (const [uri, record] of uris) {
        // A backend session that is gone (the backend restarted) took its subscriptions with it.
        if (!session.releaseSubscription(name, uri) || session.usable(name) !== record) continue;
        void this.#healer.send(ctx, session, link, record, { jsonrpc: '2.0', id: 'gatehouse-unsubscribe', method: 'resources/unsubscribe', params: { uri } }).catch(() => undefined);
      }
    }
  }

  /**
   * A legacy client's resources/subscribe (or unsubscribe) of a modern backend's resource: a
   * modern backend takes subscriptions in its listen, so the session keeps it and the backend's
   * listen on the client's GET stream opens again with it.
   */
  #subscribeModern(ctx: Context, session: AggregatedSession, link: BackendLink, request: JsonRpcRequest): HookOutcome | Promise<HookOutcome> {
    const uri = request.params?.['uri'];
    if (typeof uri !== 'string') return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: 'Invalid params: uri is required' } });
    const maxBytes = this.#o.session.maxSessionBytes;
    switch (session.subscribe(link.name, uri, request.method === 'resources/subscribe', maxBytes)) {
      case 'changed':
        session.stream?.backendJoined(link.name);
        break;
      case 'too large':
        return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: `Invalid params: a session keeps at most ${maxBytes} bytes of resource subscriptions (their URIs, session.maxSessionSize): unsubscribe one first` } });
      case 'too many':
        return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: `Invalid params: a session keeps at most ${MAX_SUBSCRIPTIONS_PER_BACKEND} resource subscriptions on backend "${link.name}": unsubscribe one first` } });
    }
    return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, result: {} });
  }

  /** A request the gateway answers itself (lists, ping) or sends to every backend (logging). */
  async #request(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<HookOutcome> {
    const entry = mcpMethod(request.method);
    const list = entry?.kind === 'list' ? entry.list : null;
    if (list !== null) {
      const cursor = request.params?.cursor;
      // A first page is served fresh (each part's ttlMs); the next pages come from the same list.
      const cache = await this.#list(ctx, session, list, cursor === undefined);
      const pageSize = this.#o.aggregation.pageSize;
      const hints = ctx.envelope === null ? null : hintsOf(cache, performance.now(), IMPLICIT_LIST_TTL_MS);
      if (this.#o.chain.responseHooks(request.method) === null) {
        // No hook wants the object: the page's text, serialized once per list version.
        const text = pageText(list, cache, session, cursor, pageSize);
        if (text !== null) {
          const result = hints === null ? text : withCacheHints(text, hints, this.#serverMeta);
          return new Reply(200, `{"jsonrpc":"2.0","id":${JSON.stringify(request.id)},"result":${result}}`, { 'content-type': 'application/json' });
        }
      }
      const result = page(list, cache, session, cursor, pageSize);
      if (result === null) return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: 'Invalid cursor: list again from the start' } });
      return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, result: hints === null ? result : { ...result, resultType: 'complete', ...hints, _meta: JSON.parse(this.#serverMeta) as unknown } });
    }
    if (request.method === 'subscriptions/listen' && ctx.envelope !== null) return this.#listen(ctx, session, request);
    switch (request.method) {
      case 'server/discover':
        // Asked inside a legacy session too: a dual-era client may probe before it falls back.
        return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, result: discoverResult(session, this.#o.name, this.#o.links, { ttlMs: IMPLICIT_LIST_TTL_MS, cacheScope: 'private' }) });
      case 'ping':
        return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, result: {} });
      case 'logging/setLevel': {
        // Modern backends have no session to set it on: they are told with each request (_meta).
        const level = request.params?.level;
        if (typeof level === 'string' && /^[a-z]{1,16}$/.test(level)) {
          session.setLogLevel(level);
          await this.#o.store.update(session.record);
        }
        return this.#broadcastRequest(ctx, session, request, 'logging');
      }
      default:
        return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${request.method}` } });
    }
  }

  /** A response built here, through the method's onResponse hooks, as the client gets it. */
  #answer(ctx: Context, response: JsonRpcResponse, headers?: Record<string, string>): HookOutcome | Promise<HookOutcome> {
    const hooks = this.#o.chain.responseHooks(ctx.rpcMethod);
    if (hooks === null) return this.#reply(ctx, response, headers);
    const hooked = runResponseHooks(hooks, ctx, response);
    return isPromise(hooked) ? hooked.then((settled) => this.#reply(ctx, settled, headers)) : this.#reply(ctx, hooked, headers);
  }

  /**
   * A response as the client's era wants it, after the hooks (which see one shape in both eras):
   * to a modern client every result says it is complete, and an unknown method is a 404.
   */
  #reply(ctx: Context, response: JsonRpcResponse, headers?: Record<string, string>): Reply {
    if (ctx.envelope === null) return Reply.json(200, response, headers);
    return Reply.json(response.error?.code === METHOD_NOT_FOUND ? 404 : 200, completed(response), headers);
  }

  /**
   * A merged list: cached per session; the backends the session lacks are tried first when due.
   * To be served (`fresh`) it must be within its freshness; to route a call any cached one does.
   */
  async #list(ctx: Context, session: AggregatedSession, kind: ListKind, fresh = false): Promise<ListCache> {
    if (session.record.missing.length > 0) await this.#healer.joinMissing(ctx, session);
    const cached = session.lists.get(kind);
    if (cached !== undefined && (!fresh || isFresh(cached, performance.now()))) return cached;
    return (
      loadList(
        kind,
        session,
        this.#o.links,
        this.#o.aggregation,
        (link, message, sink) => this.#healer.call(ctx, session, link, message, sink),
        (link) => this.#sink(session, link),
        (link, error) => this.#o.log.warn({ backend: link.name, err: error, session: sessionTag(session.id) }, `${kind} of backend ${link.name} left out: it failed`),
        // A modern client's legacy backends send it no list_changed: their lists age out instead.
        session.record.modern === true ? IMPLICIT_LIST_TTL_MS : null,
      )
    );
  }

  async #resourceOwner(ctx: Context, session: AggregatedSession, uri: string): Promise<BackendLink | null> {
    const [resources, templates] = await Promise.all([this.#list(ctx, session, 'resources'), this.#list(ctx, session, 'resourceTemplates')]);
    const owner = resourceOwner(resources, templates, uri);
    return owner === null ? null : (this.#links.get(owner) ?? null);
  }

  /** Sends a request to every backend declaring `capability`; answers {} once they did. */
  async #broadcastRequest(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, capability: string): Promise<HookOutcome> {
    const targets = this.#o.links.filter((link) => {
      const backend = session.backends.get(link.name);
      return backend !== undefined && backend.capabilities[capability] !== undefined && !isModernVersion(backend.protocolVersion);
    });
    const results = await Promise.allSettled(targets.map((link) => this.#healer.call(ctx, session, link, request, this.#sink(session, link))));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' || r.value.response?.error !== undefined ? [targets[i]!.name] : []));
    if (failed.length > 0 && failed.length === targets.length) {
      return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INTERNAL_ERROR, message: `${request.method} failed on every backend: ${failed.join(', ')}` } });
    }
    return this.#answer(ctx, { jsonrpc: '2.0', id: request.id, result: {} });
  }

  /**
   * Forwards a routed request to `link`, its answer streamed back; the backend joins the session
   * first when it is not in it, and joins again (once) when it says it lost the session.
   */
  #route(ctx: Context, session: AggregatedSession, link: BackendLink, request: JsonRpcRequest): HookOutcome | Promise<HookOutcome> {
    if (ctx.envelope !== null && isGatewayState(request.params?.['requestState'])) return this.#resumeParked(ctx, link, request);
    const backend = session.usable(link.name);
    if (backend !== undefined) {
      // The session's GET stream to this backend is on its way: the call follows it (stream-openings.ts).
      const opening = session.stream?.opening(link.index) ?? null;
      return opening === null ? this.#send(ctx, session, link, backend, request, true) : opening.then(() => this.#send(ctx, session, link, backend, request, true));
    }
    return this.#healer.join(ctx, session, link).then(
      (joined) => this.#send(ctx, session, link, joined, request, true),
      (err: unknown) => (callerMustReauthenticate(err) ? err : this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INTERNAL_ERROR, message: reasonOf(err), data: { error: 'backend_unavailable', backend: link.name } } })),
    );
  }

  #send(ctx: Context, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, request: JsonRpcRequest, mayRetry: boolean): HookOutcome | Promise<HookOutcome> {
    // Written anew from the parsed message, never the client's bytes: the backend must run what
    // was routed and checked (a body with a key twice, `"name":"hidden","name":"allowed"`, is read
    // last-wins here but first-wins by some backends' parsers). In the backend's era.
    const spliced = this.#clientBytes(ctx, session, request, backend);
    const sent = spliced === null ? forBackend(request, backend, ctx.envelope ?? session.envelope) : request;
    const body = spliced ?? Buffer.from(JSON.stringify(sent));
    const headers = link.headers(ctx, backend, 'application/json, text/event-stream', undefined, sent);
    if (isPromise(headers)) return headers.then((settled) => this.#dispatchTo(ctx, session, link, backend, body, mayRetry, settled));
    return this.#dispatchTo(ctx, session, link, backend, body, mayRetry, headers);
  }

  /**
   * A modern client's request for a legacy backend as the client's own bytes, the envelope cut
   * out (EnvelopeTails), when nothing else is to change: it is the request the client sent
   * (no name rewritten) and no hook sees messages (with onMessage or onResponse hooks, the
   * backend gets what the hooks saw, written anew). Null: the parsed message, written anew.
   */
  #clientBytes(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, backend: BackendSessionRecord): Buffer | null {
    if (ctx.envelope === null || request !== ctx.message || ctx.body === null || this.#o.chain.seesMessages || isModernVersion(backend.protocolVersion)) return null;
    return session.envelopeTails.cut(request, ctx.body);
  }

  #dispatchTo(ctx: Context, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, body: Buffer, mayRetry: boolean, headers: string[] | GatewayError): HookOutcome | Promise<HookOutcome> {
    if (headers instanceof GatewayError) return this.#credentialFailure(ctx, link, headers);
    headers.push('content-type', 'application/json');
    if (!mayBeAsked(ctx, session, backend)) return this.#start(ctx, session, link, backend, body, mayRetry, headers, false);
    // The backend may ask this call for input on its session's own stream: that stream is open first.
    const opening = this.#holdStream(ctx, session, link, backend);
    if (opening === null) return this.#start(ctx, session, link, backend, body, mayRetry, headers, true);
    return opening.then(() => this.#start(ctx, session, link, backend, body, mayRetry, headers, true));
  }

  #start(ctx: Context, session: AggregatedSession, link: BackendLink, backend: BackendSessionRecord, body: Buffer, mayRetry: boolean, headers: string[], askable: boolean): HookOutcome {
    if (ctx.res.destroyed) return undefined;
    if (ctx.rpcId !== null) session.inflight.set(ctx.rpcId, link.index);
    const createsTask = (ctx.message as JsonRpcRequest).params?.task !== undefined;
    const exchange = new RoutedExchange(ctx, link, session, backend, this, this.#o.streams, this.#o.chain.responseHooks(ctx.rpcMethod), createsTask, body, mayRetry);
    if (askable) session.callStarted(link.name, exchange);
    exchange.dispatch(link.pool, 'POST', headers, body);
    return undefined;
  }

  /**
   * The GET stream of a legacy backend's session, held for the modern clients of an implicit
   * session (input-stream.ts): null when it is open (or refused lately, or no stream connection
   * is free: the call goes without); else it is being opened, and the call waits for the
   * backend's answer to it (at most HOLD_STREAM_WAIT_MS), since a backend drops what it would
   * send on a stream that is not open yet.
   */
  #holdStream(ctx: Context, session: AggregatedSession, link: BackendLink, record: BackendSessionRecord): Promise<unknown> | null {
    const held = session.heldStreams.get(link.name);
    if (held !== undefined && held.record === record) {
      if (held instanceof InputStream) return held.isOpen ? null : waitAtMost(held.opened, HOLD_STREAM_WAIT_MS);
      if (!('close' in held) && performance.now() - held.refusedAt < HOLD_STREAM_RETRY_MS) return null;
    }
    if (held !== undefined && 'close' in held) held.close(); // of a backend session that is gone
    session.heldStreams.delete(link.name);
    if (link.streamPool.refusal() !== null) return null;
    const stream = new InputStream(this.#streamOwner(session), ctx, link, record);
    session.heldStreams.set(link.name, stream);
    const open = (headers: string[] | GatewayError): void => {
      if (headers instanceof GatewayError || stream.cancelled) stream.close();
      else stream.dispatch(link.streamPool, 'GET', headers, null);
    };
    const headers = link.headers(ctx, record, 'text/event-stream');
    if (isPromise(headers)) headers.then(open, () => stream.close());
    else open(headers);
    return waitAtMost(stream.opened, HOLD_STREAM_WAIT_MS);
  }

  /** What a held stream of `session` reports to (made once per stream opened). */
  #streamOwner(session: AggregatedSession): InputStreamOwner {
    return {
      request: (stream, request) => this.#streamRequest(session, stream.link, stream.record, stream.ctx, request),
      notification: (_stream, message) => this.#observe(session, message),
      ended: (stream, status) => {
        if (session.heldStreams.get(stream.link.name) !== stream) return;
        // Refused (no GET stream there, or another stream of the session has it): not asked again at once. A lost session heals through the calls.
        if (status !== null && status !== 404) session.heldStreams.set(stream.link.name, { refusedAt: performance.now(), record: stream.record });
        else session.heldStreams.delete(stream.link.name);
      },
    };
  }

  /**
   * A request a legacy backend sent a modern client on its session's own stream (a held one, or a
   * listen's). 2026-07-28 takes a server's request only as the input_required answer of a call
   * (tools/call, prompts/get, resources/read) and carries none on subscriptions/listen, and the
   * stream does not say which call it is for: it is asked in the one call of the session in
   * flight on that backend session. With none, or several (the session is shared by the
   * principal's clients with these capabilities), the backend hears at once that it cannot be
   * asked, rather than wait for an answer that cannot come. A ping is answered here.
   */
  #streamRequest(session: AggregatedSession, link: BackendLink, record: BackendSessionRecord, ctx: Context, request: JsonRpcRequest): void {
    const answer = (response: Omit<JsonRpcResponse, 'jsonrpc' | 'id'>): void =>
      void this.#healer.send(ctx, session, link, record, { jsonrpc: '2.0', id: request.id, ...response }).catch(() => undefined);
    if (request.method === 'ping') return answer({ result: {} });
    const calls = session.callsOn(link.name, record);
    if (calls.length === 1 && calls[0]!.askFromStream(request)) return;
    const why =
      calls.length === 0
        ? 'no call of this client is in flight to ask it in: a 2026-07-28 client is asked for input only in the answer to a call'
        : `the gateway cannot tell which of ${calls.length} calls in flight this request is for (the client speaks 2026-07-28: it is asked in the answer to a call, and this request came on the session's stream)`;
    answer({ error: { code: INTERNAL_ERROR, message: why } });
  }

  /**
   * A prepareBackend hook could not give the request its credentials. A refusal of the caller
   * (401, 403) answers the request as HTTP; any other failure (the token exchange service down
   * or slow) is that backend's: the call gets a JSON-RPC error naming it, the session goes on.
   */
  #credentialFailure(ctx: Context, link: BackendLink, err: GatewayError): HookOutcome | Promise<HookOutcome> {
    if (err.status === 401 || err.status === 403 || ctx.rpcId === null) return err;
    ctx.log(err);
    const response = rpcErrorResponse(err, ctx.rpcId);
    response.error.data['backend'] = link.name;
    return this.#answer(ctx, response);
  }

  // ---- RouteListener ----

  /** The backend forgot the session (it restarted): it joins again, then the request goes once more. */
  lost(exchange: RoutedExchange): void {
    const { ctx, session, link } = exchange;
    this.#healer
      .rejoin(ctx, session, link, exchange.backendSession)
      .then(
        (backend) => this.#send(ctx, session, link, backend, JSON.parse(exchange.body!.toString('utf8')) as JsonRpcRequest, false),
        (err: unknown) => (callerMustReauthenticate(err) ? err : this.#answer(ctx, { jsonrpc: '2.0', id: ctx.rpcId, error: { code: INTERNAL_ERROR, message: reasonOf(err), data: { error: 'backend_unavailable', backend: link.name } } })),
      )
      .then(
        (outcome) => respond(ctx, outcome),
        (err: unknown) => ctx.fail(err),
      );
  }

  stillKnown(exchange: RoutedExchange): Promise<boolean> {
    return this.#healer.stillKnown(exchange.ctx, exchange.link, exchange.backendSession);
  }

  inputRequired(exchange: RoutedExchange, response: JsonRpcResponse): void {
    const { ctx, session, link, backendSession } = exchange;
    const request = JSON.parse(exchange.body!.toString('utf8')) as JsonRpcRequest;
    void relayInput(
      {
        ctx,
        session,
        link,
        request,
        waits: this.#waits,
        call: (message, sink, timing) => this.#healer.send(ctx, session, link, backendSession, message, sink, timing),
        hooks: this.#o.chain.responseHooks(ctx.rpcMethod),
      },
      response,
    );
  }

  park(exchange: RoutedExchange, requests: ReadonlyMap<string, JsonRpcRequest>): string | null {
    const { ctx, session, link, backendSession } = exchange;
    const refuse = (request: JsonRpcRequest, why: string): null => {
      // The backend hears it at once instead of waiting for an answer that cannot come.
      void this.#healer.send(ctx, session, link, backendSession, { jsonrpc: '2.0', id: request.id, error: { code: INTERNAL_ERROR, message: why } }).catch(() => undefined);
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
  async #resumeParked(ctx: Context, link: BackendLink, request: JsonRpcRequest): Promise<HookOutcome> {
    const refused = (): HookOutcome | Promise<HookOutcome> =>
      this.#answer(ctx, { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: 'Invalid params: this requestState was not issued by this gateway for this call and principal, was used already, or expired' } });
    const parkId = this.#parked.open(request.params!['requestState'] as string, ctx.principal, request.method, targetKey(ctx));
    if (parkId === null) return refused();
    const responses = inputResponsesOf(request);
    const holder = replicaOf(parkId);
    if (holder !== this.#o.relay.replica) return this.#resumeElsewhere(ctx, holder, parkId, responses);
    const parked = this.#parked.take(parkId);
    if (parked === null || parked.call.link !== link) return refused();
    await this.#answerParked(ctx, parked.call, parked.requests, responses);
    if (ctx.res.destroyed) parked.call.expire();
    else parked.call.resumeWith(ctx);
    return undefined;
  }

  /** Each of the parked call's requests gets the client's answer (or, without one, an error) at its backend. */
  async #answerParked(ctx: Context, exchange: RoutedExchange, requests: ReadonlyMap<string, { readonly id: string | number }>, responses: Record<string, unknown>): Promise<void> {
    await Promise.allSettled(
      [...requests].map(([key, asked]) =>
        this.#healer.send(ctx, exchange.session, exchange.link, exchange.backendSession, responses[key] === undefined
          ? { jsonrpc: '2.0', id: asked.id, error: { code: INTERNAL_ERROR, message: 'the client gave no answer' } }
          : { jsonrpc: '2.0', id: asked.id, result: responses[key] }),
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
          this.#waits.deliver(session, waitId, position, message['response'] as JsonRpcResponse);
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

  outcome(exchange: RoutedExchange, problem: GatewayError | null): void {
    // The gateway's own stream limit refused it: the backend was never asked, its health is not in question.
    if (problem?.code === 'stream_limit') return;
    if (problem === null) this.#healer.succeeded(exchange.link);
    else this.#healer.failed(exchange.session, exchange.link, exchange.backendSession, problem);
  }

  // ---- notifications and answers from the client ----

  async #notify(ctx: Context, session: AggregatedSession, notification: JsonRpcNotification): Promise<HookOutcome> {
    // Modern backends take no notifications over HTTP (a cancellation is the closed stream).
    let targets = this.#o.links.filter((link) => session.has(link.name) && !isModernVersion(session.backends.get(link.name)!.protocolVersion));
    if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      const index = typeof requestId === 'string' || typeof requestId === 'number' ? session.inflight.get(requestId) : undefined;
      if (index !== undefined) targets = [this.#o.links[index]!];
    }
    // A backend that lost the session has nothing this could be about: it is not joined for it.
    await Promise.allSettled(targets.map((link) => {
      const backend = session.usable(link.name);
      return backend === undefined ? undefined : this.#healer.send(ctx, session, link, backend, notification);
    }));
    return Reply.empty(202);
  }

  /** The client's answer to a backend's request (sampling, elicitation, roots): back to that backend. */
  async #answerFromClient(ctx: Context, session: AggregatedSession, response: JsonRpcResponse): Promise<HookOutcome> {
    // An answer to what the gateway asked on a modern backend's behalf (input-relay.ts).
    const input = unwrapInputRequestId(response.id);
    if (input !== null) {
      const holder = replicaOf(input.waitId);
      const delivered =
        holder === this.#o.relay.replica
          ? this.#waits.deliver(session.id, input.waitId, input.position, response)
          : await this.#o.relay.send(holder, { type: 'answer', session: session.id, waitId: input.waitId, position: input.position, response });
      if (!delivered) throw new GatewayError('invalid_jsonrpc', `Invalid Request: no request of this session waits for id ${untrusted(String(response.id))}`);
      return Reply.empty(202);
    }
    const origin = unwrapRequestId(response.id);
    const link = origin === null ? undefined : this.#o.links[origin.backendIndex];
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

  /** Messages a backend sends on a fan-out call's stream: to the client's GET stream, if open. */
  #sink(session: AggregatedSession | null, link: BackendLink): MessageSink {
    return (message) => {
      if (session === null) return;
      this.#observe(session, message);
      session.stream?.deliver(link.index, message);
    };
  }

  readonly #observe = (session: AggregatedSession, message: JsonRpcMessage): void => {
    if ('method' in message && !('id' in message)) {
      const entry = mcpMethod(message.method);
      if (entry?.kind === 'notification' && entry.list !== null) session.invalidate(entry.list);
    }
  };

  /**
   * A backend turned healthy: the sessions here that lack it and have a GET stream (the clients
   * that can hear list_changed) join it now, on their stream's credentials; the others join it
   * on their next request.
   */
  #recovered(name: string): void {
    const link = this.#links.get(name);
    if (link === undefined) return;
    // Spread over a few seconds: a backend that just came up is not met by every session at once.
    const spreadMs = Math.min(RECOVERY_SPREAD_MAX_MS, this.#local.size * 5);
    for (const session of this.#local.values()) {
      if (session.stream === null || session.has(name)) continue;
      const join = (): void => {
        const stream = session.stream;
        if (stream !== null && !session.has(name)) this.#healer.join(stream.ctx, session, link).catch(() => undefined);
      };
      setTimeout(join, Math.random() * spreadMs).unref();
    }
  }

  // ---- GET and DELETE ----

  async #stream(ctx: Context): Promise<HookOutcome> {
    if (!(ctx.header('accept') ?? '').includes('text/event-stream')) {
      throw new GatewayError('not_acceptable', 'Not Acceptable: the GET stream needs Accept: text/event-stream');
    }
    const session = await this.#session(ctx);
    const lastEventId = ctx.header('last-event-id');
    const parsed = lastEventId === undefined ? null : parseEventId(lastEventId);
    if (parsed?.kind === 'routed') {
      // Resuming a request's stream: that backend replays it (from the session it was sent on), and
      // the response it may carry is the one the ticket names, if this gateway issued it (resume-tickets.ts).
      const link = this.#o.links[parsed.backendIndex];
      const backend = link === undefined ? undefined : session.usable(link.name);
      if (link === undefined || backend === undefined) throw new GatewayError('invalid_request', 'Last-Event-ID does not belong to this session');
      if (this.#o.chain.hasResponseHooks) {
        // The replayed response would reach the client without its method's hooks: a resumed
        // stream is a GET, not the request, and runs none of them.
        throw new GatewayError('invalid_request', 'Resuming a routed request\'s stream is not available on a gateway with onResponse hooks: send the request again');
      }
      const headers = await link.headers(ctx, backend, 'text/event-stream', parsed.eventId);
      if (headers instanceof GatewayError) return headers;
      const ticket = parsed.ticket === null ? null : this.tickets.open(session.id, link.name, parsed.ticket);
      new RoutedExchange(ctx, link, session, backend, this, this.#o.streams, null, false, null, false, ticket).dispatch(link.streamPool, 'GET', headers, null);
      return undefined;
    }
    session.stream?.close(); // one standalone stream per session, as backends allow
    const refusal = streamRefusal(session, this.#links);
    if (refusal !== null) return refusal;
    const stream = new ClientStream(ctx, session, this.#links, this.#o.streams, this.#observe, this.#healer, parsed?.kind === 'multiplex' ? parsed.positions : new Map());
    session.stream = stream;
    stream.open();
    return undefined;
  }

  async #delete(ctx: Context): Promise<HookOutcome> {
    const session = await this.#session(ctx);
    // Gone from the store first: a GET that races the DELETE finds no session to reopen streams in.
    await this.#o.store.delete(session.id);
    await this.endBackends(ctx, session.record);
    return Reply.empty(200, { 'mcp-session-id': session.id });
  }

  async close(): Promise<void> {
    this.#o.health.stop();
    this.#parked.clear();
    for (const session of this.#local.values()) session.close();
  }

  status(): unknown {
    return {
      mode: 'aggregated',
      name: this.#o.name,
      sessions: this.#local.size,
      backends: this.#o.health.all(),
    };
  }
}
