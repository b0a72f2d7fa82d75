/**
 * Aggregated mode: one MCP endpoint in front of a group of backends. The gateway owns the
 * client's session (its own random Mcp-Session-Id) and holds one session per backend.
 *
 * A POST is, in order: read and checked (intake.ts), its onMessage hooks run, its session found
 * (this process's cache, else the shared store), then by kind:
 *   initialize            → every backend initialized in parallel, capabilities merged (init.ts)
 *   lists                 → merged across backends, cached per session, paged (lists.ts)
 *   tools/call, prompts/get, resources/*, completion/complete, tasks/*
 *                         → routed to the owning backend, its answer streamed back (routed.ts)
 *   ping, logging/setLevel → answered here / sent to every backend
 *   client notifications  → to every backend (cancellations: to the request's backend)
 *   client responses      → to the backend that asked (the id says which, ids.ts)
 * GET opens the multiplexed stream (client-stream.ts); DELETE ends every backend session.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { Chain, HookOutcome } from '../../chain.ts';
import type { Context } from '../../context.ts';
import { GatewayError } from '../../errors.ts';
import { startReading, type BodySink } from '../../http/body.ts';
import { Reply } from '../../reply.ts';
import { respond, respondWhenSettled } from '../../respond.ts';
import { methodNotAllowed, type McpEndpoint } from '../mcp-endpoint.ts';
import { acceptMessages, checkPostHead, runMessageHooks } from '../intake.ts';
import type { JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../jsonrpc.ts';
import type { OpenStreams } from '../streams.ts';
import type { BackendLink, MessageSink } from './backend-link.ts';
import { ClientStream } from './client-stream.ts';
import type { AggregationConfig, FailureHandlingConfig, SessionConfig } from './config.ts';
import type { HealthMonitor } from './health.ts';
import { parseEventId, unwrapRequestId } from './ids.ts';
import { initializeSession, reconnectBackend } from './init.ts';
import { LIST_CHANGED, loadList, page, resourceOwner, type ListKind } from './lists.ts';
import { RoutedExchange } from './routed.ts';
import { AggregatedSession } from './session.ts';
import { ownedBy, sessionTag, type SessionRecord, type SessionStore } from './session-store.ts';
import { then } from '../../thenable.ts';

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
  log: Logger;
}

/** JSON-RPC error codes the gateway answers with itself. */
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const RESOURCE_NOT_FOUND = -32002;

const LIST_METHODS: Readonly<Record<string, ListKind>> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
};

function sessionNotFound(): GatewayError {
  return new GatewayError('session_not_found', 'Session not found: initialize a new session');
}

export class AggregatedEndpoint implements McpEndpoint, BodySink<Context> {
  readonly path: string;
  readonly #o: AggregatedOptions;
  readonly #links: ReadonlyMap<string, BackendLink>;
  /** This process's live sessions: what the store does not hold (list caches, streams, routing). */
  readonly #local: LRUCache<string, AggregatedSession>;

  constructor(options: AggregatedOptions) {
    this.path = options.path;
    this.#o = options;
    this.#links = new Map(options.links.map((link) => [link.name, link]));
    this.#local = new LRUCache<string, AggregatedSession>({
      max: options.session.maxSessions,
      ttl: options.session.ttlMs,
      updateAgeOnGet: true,
      dispose: (session) => session.close(),
    });
  }

  handle(ctx: Context): HookOutcome | Promise<HookOutcome> {
    switch (ctx.req.method) {
      case 'POST':
        checkPostHead(ctx, this.#o.maxBodyBytes);
        startReading(ctx.req, this.#o.maxBodyBytes, this, ctx);
        return undefined;
      case 'GET':
        return this.#stream(ctx);
      case 'DELETE':
        return this.#delete(ctx);
      default:
        throw methodNotAllowed(ctx);
    }
  }

  body(ctx: Context, body: Buffer): void {
    try {
      acceptMessages(ctx, body);
      if (Array.isArray(ctx.message)) {
        throw new GatewayError('invalid_jsonrpc', 'Invalid Request: JSON-RPC batches are not supported by an aggregated server (MCP 2025-06-18 removed them)');
      }
      const outcome = runMessageHooks(ctx, this.#o.chain);
      respondWhenSettled(ctx, outcome === undefined ? this.#dispatch(ctx) : then(outcome, (settled) => (settled !== undefined ? settled : this.#dispatch(ctx))));
    } catch (err) {
      ctx.fail(err);
    }
  }

  bodyFailed(ctx: Context, error: GatewayError): void {
    ctx.fail(error);
  }

  // ---- sessions ----

  /**
   * The client's session. The store is asked on every request (and its TTL extended): a session
   * another process deleted must not live on here, and must never be revived by re-initializing
   * its backends. The in-memory store answers from a map; Redis with one GETEX.
   */
  async #session(ctx: Context): Promise<AggregatedSession> {
    const id = ctx.header('mcp-session-id');
    if (id === undefined) throw new GatewayError('session_required', 'Bad Request: Mcp-Session-Id header is required (initialize first)');
    const record = await this.#o.store.touch(id, ctx.principal);
    if (record === null) {
      this.#local.delete(id);
      throw sessionNotFound();
    }
    // Another principal holding this id is told what a stranger is: no such session.
    if (!ownedBy(record, ctx.principal)) throw sessionNotFound();
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

  async #dispatch(ctx: Context): Promise<HookOutcome> {
    const message = ctx.message as JsonRpcMessage;
    if ('method' in message && 'id' in message && message.method === 'initialize') {
      const created = await initializeSession(ctx, message, {
        name: this.#o.name,
        links: this.#o.links,
        failure: this.#o.failure,
        sink: (link) => this.#sink(null, link),
        log: this.#o.log,
      });
      if (created instanceof Reply) return created;
      // One principal's many sessions end its own oldest ones, never anyone else's.
      for (const ended of await this.#o.store.save(created.session.record)) {
        this.#o.log.info({ session: sessionTag(ended.id) }, 'a principal opened more than maxSessionsPerPrincipal sessions: its oldest one ended');
        void this.endBackends(null, ended);
      }
      this.#local.set(created.session.id, created.session);
      return Reply.json(200, { jsonrpc: '2.0', id: message.id, result: created.result }, { 'mcp-session-id': created.session.id });
    }
    const session = await this.#session(ctx);
    if (!('method' in message)) return this.#answerFromClient(ctx, session, message);
    if (!('id' in message)) return this.#notify(ctx, session, message);
    return this.#request(ctx, session, message);
  }

  async #request(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<HookOutcome> {
    const params = request.params ?? {};
    const list = LIST_METHODS[request.method];
    if (list !== undefined) {
      const cache = await this.#list(ctx, session, list);
      const result = page(list, cache, session, params.cursor, this.#o.aggregation.pageSize);
      return result === null ? Reply.rpcError(request.id, INVALID_PARAMS, 'Invalid cursor: list again from the start') : Reply.rpcResult(request.id, result);
    }
    switch (request.method) {
      case 'ping':
        return Reply.rpcResult(request.id, {});
      case 'tools/call':
      case 'prompts/get': {
        const kind = request.method === 'tools/call' ? 'tools' : 'prompts';
        const name = params.name;
        const exposed = typeof name === 'string' ? (await this.#list(ctx, session, kind)).names?.byName.get(name) : undefined;
        if (exposed === undefined) return Reply.rpcError(request.id, INVALID_PARAMS, `Unknown ${kind === 'tools' ? 'tool' : 'prompt'}: ${String(name)}`);
        return this.#route(ctx, session, this.#links.get(exposed.backend)!, { ...request, params: { ...params, name: exposed.original } });
      }
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        const uri = typeof params.uri === 'string' ? params.uri : '';
        const owner = await this.#resourceOwner(ctx, session, uri);
        if (owner === null) return Reply.rpcError(request.id, RESOURCE_NOT_FOUND, `Resource not found: ${uri}`);
        return this.#route(ctx, session, owner, request);
      }
      case 'completion/complete':
        return this.#complete(ctx, session, request);
      case 'logging/setLevel':
        return this.#broadcastRequest(ctx, session, request, 'logging');
      case 'tasks/get':
      case 'tasks/result':
      case 'tasks/cancel': {
        const index = typeof params.taskId === 'string' ? session.tasks.get(params.taskId) : undefined;
        const link = index === undefined ? undefined : this.#o.links[index];
        if (link === undefined) return Reply.rpcError(request.id, INVALID_PARAMS, `Unknown task: ${String(params.taskId)}`);
        return this.#route(ctx, session, link, request);
      }
      default:
        return Reply.rpcError(request.id, METHOD_NOT_FOUND, `Method not found: ${request.method}`);
    }
  }

  #list(ctx: Context, session: AggregatedSession, kind: ListKind) {
    return loadList(kind, session, this.#o.links, this.#o.aggregation, ctx, (link) => this.#sink(session, link), (link, error) =>
      this.#o.log.warn({ backend: link.name, err: error, session: sessionTag(session.id) }, `${kind} of backend ${link.name} left out: it failed`),
    );
  }

  async #resourceOwner(ctx: Context, session: AggregatedSession, uri: string): Promise<BackendLink | null> {
    const [resources, templates] = await Promise.all([this.#list(ctx, session, 'resources'), this.#list(ctx, session, 'resourceTemplates')]);
    const owner = resourceOwner(resources, templates, uri);
    return owner === null ? null : (this.#links.get(owner) ?? null);
  }

  async #complete(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<HookOutcome> {
    const ref = (request.params?.ref ?? {}) as { type?: string; name?: string; uri?: string };
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const exposed = (await this.#list(ctx, session, 'prompts')).names?.byName.get(ref.name);
      if (exposed === undefined) return Reply.rpcError(request.id, INVALID_PARAMS, `Unknown prompt: ${ref.name}`);
      return this.#route(ctx, session, this.#links.get(exposed.backend)!, { ...request, params: { ...request.params, ref: { ...ref, name: exposed.original } } });
    }
    if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const templates = await this.#list(ctx, session, 'resourceTemplates');
      const template = templates.templates?.find((t) => t.uriTemplate === ref.uri);
      const owner = template !== undefined ? this.#links.get(template.backend) : await this.#resourceOwner(ctx, session, ref.uri);
      if (owner === undefined || owner === null) return Reply.rpcError(request.id, INVALID_PARAMS, `Unknown resource template: ${ref.uri}`);
      return this.#route(ctx, session, owner, request);
    }
    return Reply.rpcError(request.id, INVALID_PARAMS, 'completion/complete needs a ref/prompt name or a ref/resource uri');
  }

  /** Sends a request to every backend declaring `capability`; answers {} once they did. */
  async #broadcastRequest(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, capability: string): Promise<HookOutcome> {
    const targets = this.#o.links.filter((link) => session.backends.get(link.name)?.capabilities[capability] !== undefined);
    const results = await Promise.allSettled(targets.map((link) => link.call(ctx, session.backends.get(link.name)!, request, this.#sink(session, link))));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' || r.value.response?.error !== undefined ? [targets[i]!.name] : []));
    if (failed.length > 0 && failed.length === targets.length) return Reply.rpcError(request.id, INTERNAL_ERROR, `${request.method} failed on every backend: ${failed.join(', ')}`);
    return Reply.rpcResult(request.id, {});
  }

  /** Forwards a routed request to `link`, streaming its answer; re-creates the backend session once if it was lost. */
  async #route(ctx: Context, session: AggregatedSession, link: BackendLink, request: JsonRpcRequest, retried = false): Promise<HookOutcome> {
    const backendSession = session.backends.get(link.name);
    if (backendSession === undefined) {
      return Reply.rpcError(request.id, INTERNAL_ERROR, `backend "${link.name}" is not part of this session (it was unavailable when the session started)`);
    }
    const headers = await link.headers(ctx, backendSession, 'application/json, text/event-stream');
    if (headers instanceof GatewayError) return headers;
    headers.push('content-type', 'application/json');
    if (ctx.res.destroyed) return undefined;
    session.inflight.set(request.id, link.index);
    const onLost = retried ? null : () => void this.#recover(ctx, session, link, request);
    const parseJson = request.params?.task !== undefined;
    new RoutedExchange(ctx, link, session, onLost, parseJson).dispatch(link.pool, 'POST', headers, Buffer.from(JSON.stringify(request)));
    return undefined;
  }

  /** The backend forgot its session (it restarted): a new one, stored, then the request again. */
  async #recover(ctx: Context, session: AggregatedSession, link: BackendLink, request: JsonRpcRequest): Promise<void> {
    try {
      await reconnectBackend(ctx, session, link, this.#o.log);
      await this.#o.store.save(session.record);
      respond(ctx, await this.#route(ctx, session, link, request, true));
    } catch (err) {
      respond(ctx, Reply.rpcError(request.id, INTERNAL_ERROR, (err as GatewayError).description ?? `backend "${link.name}" lost the session`));
    }
  }

  async #notify(ctx: Context, session: AggregatedSession, notification: JsonRpcNotification): Promise<HookOutcome> {
    let targets = [...session.backends.keys()].map((name) => this.#links.get(name)!);
    if (notification.method === 'notifications/cancelled') {
      const requestId = notification.params?.requestId;
      const index = typeof requestId === 'string' || typeof requestId === 'number' ? session.inflight.get(requestId) : undefined;
      if (index !== undefined) targets = [this.#o.links[index]!];
    }
    await Promise.allSettled(targets.map((link) => link.call(ctx, session.backends.get(link.name)!, notification)));
    return Reply.empty(202);
  }

  /** The client's answer to a backend's request (sampling, elicitation, roots): back to that backend. */
  async #answerFromClient(ctx: Context, session: AggregatedSession, response: JsonRpcResponse): Promise<HookOutcome> {
    const origin = unwrapRequestId(response.id);
    const link = origin === null ? undefined : this.#o.links[origin.backendIndex];
    const backendSession = link === undefined ? undefined : session.backends.get(link.name);
    if (origin === null || link === undefined || backendSession === undefined) {
      throw new GatewayError('invalid_jsonrpc', `Invalid Request: no request of this session has id ${JSON.stringify(response.id)}`);
    }
    const result = await link.call(ctx, backendSession, { ...response, id: origin.id });
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
      const kind = LIST_CHANGED[message.method];
      if (kind !== undefined) session.invalidate(kind);
    }
  };

  // ---- GET and DELETE ----

  async #stream(ctx: Context): Promise<HookOutcome> {
    if (!(ctx.header('accept') ?? '').includes('text/event-stream')) {
      throw new GatewayError('not_acceptable', 'Not Acceptable: the GET stream needs Accept: text/event-stream');
    }
    const session = await this.#session(ctx);
    const lastEventId = ctx.header('last-event-id');
    const parsed = lastEventId === undefined ? null : parseEventId(lastEventId);
    if (parsed?.kind === 'routed') {
      // Resuming a request's stream: that backend replays it.
      const link = this.#o.links[parsed.backendIndex];
      const backendSession = link === undefined ? undefined : session.backends.get(link.name);
      if (link === undefined || backendSession === undefined) throw new GatewayError('invalid_request', 'Last-Event-ID does not belong to this session');
      const headers = await link.headers(ctx, backendSession, 'text/event-stream', parsed.eventId);
      if (headers instanceof GatewayError) return headers;
      new RoutedExchange(ctx, link, session, null, false).dispatch(link.pool, 'GET', headers, null);
      return undefined;
    }
    session.stream?.close(); // one standalone stream per session, as backends allow
    const stream = new ClientStream(ctx, session, this.#links, this.#o.streams, this.#observe, parsed?.kind === 'multiplex' ? parsed.positions : new Map());
    session.stream = stream;
    stream.open();
    return undefined;
  }

  async #delete(ctx: Context): Promise<HookOutcome> {
    const session = await this.#session(ctx);
    await this.endBackends(ctx, session.record);
    await this.#o.store.delete(session.id);
    return Reply.empty(200, { 'mcp-session-id': session.id });
  }

  async close(): Promise<void> {
    this.#o.health.stop();
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
