/**
 * The HTTP server: Gatehouse's own HTTP/1.1 server (core/http/wire/, the default) or node:http
 * (`engine: node`), one Context per request, the fixed order of what a request meets,
 * the built-in operational endpoints, and graceful shutdown.
 *
 * What a request meets, in order:
 *   0. A request with two Host headers is refused (400) before anything reads either.
 *   1. /healthz, /readyz — probes; public, no origin check (probes reach the pod by IP).
 *   2. The origin guard (DNS rebinding): Host and Origin must name this gateway. First, so that
 *      nothing else runs for a request a browser was tricked into sending.
 *      Then, at the MCP endpoint, a request whose Via names this gateway came round a loop: 508.
 *   3. CORS preflight for allowed origins.
 *   4. authenticate, then authorize (chain.ts) — for the MCP endpoint, /status and /metrics, and
 *      every plugin route that does not opt out.
 *   5. The MCP endpoint (then policy, rate limits, hooks: mcp/aggregate/pipeline.ts), the admin documents, or a plugin route.
 * Every error on the way is mapped to HTTP in one place (http/error-response.ts `sendError`).
 *
 * The admin documents (/status: backends, their URLs and last errors, session count; /metrics)
 * tell an attacker what is behind the gateway. They answer on the public port only through the
 * same incoming auth as the MCP endpoint; with `admin` set they move to a listener of their own
 * (loopback by default, for scrapers and operators), without auth but behind its own Host check,
 * and the public port no longer serves them.
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { runHooks, type Chain } from './chain.ts';
import type { AdminListenerConfig, ConnectionLimits, ServerEngine, ServerSettings } from '../config/server-settings.ts';
import { Context } from '../plugin-api/context.ts';
import { GatewayError, type AuthChallenge } from '../base/errors.ts';
import { keepStringMethodsFast } from '../base/fast-string-methods.ts';
import { ClientAddresses } from '../http/client-address.ts';
import { preflightHeaders } from '../http/cors.ts';
import { OriginGuard } from '../http/origin-guard.ts';
import type { HopMark } from '../http/hop-mark.ts';
import type { HttpRequest, HttpResponse } from '../http/types.ts';
import { createListener, DEFAULT_LIMITS, listenAdmin, listenOn, type AdminListener, type Listener } from './listeners.ts';
import { compileRoutes, drainedBy, type LiveRoutes, type RouteHandler, type Routes } from './live-routes.ts';
import type { McpEndpoint } from './mcp-endpoint.ts';
import { SessionRequestLimit } from './session-request-limit.ts';
import { writeAccessLog } from './access-log.ts';
import { observedRequest } from './request-observation.ts';
import { kCtx, kLive, onResponseClose, type ServerScope, type TrackedResponse } from './response-close.ts';
import type { GatewayMetrics, RouteMetrics } from '../observe/metrics.ts';
import { Reply } from '../plugin-api/reply.ts';
import { respondWhenSettled } from './respond.ts';
import { isPromise } from '../base/thenable.ts';

export interface ServerOptions {
  host: string;
  port: number;
  log: Logger;
  metrics: GatewayMetrics;
  chain: Chain;
  mcp: McpEndpoint | null;
  /** Externally reachable URLs of this server (resourceUrl, issuer): their hosts pass the origin guard. */
  publicUrls: readonly string[];
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
  /** Told when the server shuts down (the SSE streams open to clients, say). */
  shutdown?: readonly ShutdownHook[];
  shutdownGraceMs: number;
  /** A whole request (head and body) must arrive within this, else 408 (0: no limit). */
  requestTimeoutMs?: number;
  accessLog: boolean;
  /** `gatehouse` (the default): Gatehouse's own HTTP/1.1 server; `node`: node:http. */
  engine?: ServerEngine;
  /** A separate listener for /status and /metrics (and the probes); null: they need auth on the public port. */
  admin?: AdminListenerConfig | null;
  /** Proxies whose X-Forwarded-For names the client (`server.trustedProxies`). */
  trustedProxies?: readonly string[];
  /** What one client may hold (`server.maxConnections` and the rest); defaults as the config's. */
  limits?: ConnectionLimits;
  /** This gateway's entry in Via: a request to the MCP endpoint that carries it came round a loop (508). */
  hops?: HopMark;
}

/** The server options that come from a `server` section of either configuration. */
export function listenerOptions(
  settings: ServerSettings,
): Pick<ServerOptions, 'allowedHosts' | 'allowedOrigins' | 'shutdownGraceMs' | 'requestTimeoutMs' | 'accessLog' | 'engine' | 'admin' | 'trustedProxies' | 'limits'> {
  const { allowedHosts, allowedOrigins, shutdownGraceMs, requestTimeoutMs, accessLog, engine, admin, trustedProxies, limits } = settings;
  return { allowedHosts, allowedOrigins, shutdownGraceMs, requestTimeoutMs, accessLog, engine, admin, trustedProxies, limits };
}

/**
 * What the server tells at shutdown: `drain` once it stops accepting (end what would never end
 * by itself, such as standalone SSE streams, so in-flight requests can finish), `abort` when the
 * grace period is over (end the rest).
 */
export interface ShutdownHook {
  drain(): void;
  abort(): void;
}

const kLastRequestSeen = Symbol('gatehouse.lastRequestSeen');
type LastRequestSocket = HttpRequest['socket'] & { [kLastRequestSeen]?: true };

export class GatewayServer {
  readonly http: Listener;
  readonly log: Logger;
  readonly #options: ServerOptions;
  readonly #scope: ServerScope;
  #live: LiveRoutes;
  readonly #mcpMetrics: RouteMetrics;
  readonly #builtinMetrics: RouteMetrics;
  readonly #notFoundMetrics: RouteMetrics;
  #guard: OriginGuard | null = null;
  #ready = false;
  #draining = false;
  #address: AddressInfo | null = null;
  #admin: AdminListener | null = null;
  /** Unsubscribes what listen() subscribed to the request seam. */
  #unobserve: (() => void)[] = [];

  constructor(options: ServerOptions) {
    this.#options = options;
    this.log = options.log;
    const limits = options.limits ?? DEFAULT_LIMITS;
    this.#scope = {
      log: options.log,
      challenge: null,
      metrics: options.metrics,
      accessLog: options.accessLog,
      clientAddresses: new ClientAddresses(options.trustedProxies ?? []),
      sessionLimit: limits.maxSessionRequests > 0 ? new SessionRequestLimit(limits.maxSessionRequests) : null,
    };
    const metrics = options.metrics;
    this.#mcpMetrics = metrics.route('mcp');
    this.#builtinMetrics = metrics.route('builtin');
    this.#notFoundMetrics = metrics.route('not_found');
    this.#live = compileRoutes(options, metrics, this.#scope.sessionLimit);
    this.http = createListener(this.#onRequest, { engine: options.engine, requestTimeoutMs: options.requestTimeoutMs, limits }, metrics);
  }

  /**
   * Routes new requests to `next` (a reload); those in flight finish where they started. Resolves
   * once the requests on the previous routes are done, or the shutdown grace period is over
   * (false: some were still running). Standalone streams never end by themselves: the caller
   * drains them before waiting.
   */
  swap(next: Routes): { readonly drained: Promise<boolean> } {
    const previous = this.#live;
    this.#live = compileRoutes(next, this.#options.metrics, this.#scope.sessionLimit);
    if (this.#address !== null) this.#guard = this.#originGuard(this.#address);
    return { drained: drainedBy(previous, Date.now() + this.#options.shutdownGraceMs) };
  }

  #originGuard(address: AddressInfo): OriginGuard {
    return new OriginGuard({
      host: this.#options.host,
      port: address.port,
      publicUrls: this.#live.publicUrls,
      allowedHosts: this.#options.allowedHosts,
      allowedOrigins: this.#options.allowedOrigins,
    });
  }

  setAuthChallenge(challenge: AuthChallenge | null): void {
    this.#scope.challenge = challenge;
  }

  get address(): AddressInfo {
    if (this.#address === null) throw new Error('server is not listening');
    return this.#address;
  }

  /** The admin listener's address, or null when /status and /metrics are on the public port. */
  get adminAddress(): AddressInfo | null {
    return this.#admin?.address ?? null;
  }

  async listen(): Promise<AddressInfo> {
    // Every static import has run by now, a subclass of String among them (fast-string-methods.ts).
    keepStringMethodsFast();
    const { host, port } = this.#options;
    await listenOn(this.http, port, host);
    this.#address = this.http.address() as AddressInfo;
    this.#guard = this.#originGuard(this.#address);
    const admin = this.#options.admin;
    if (admin !== undefined && admin !== null) {
      try {
        this.#admin = await listenAdmin(admin, this.#onAdminRequest);
      } catch (err) {
        await new Promise<void>((resolve) => this.http.close(() => resolve()));
        throw err;
      }
    }
    // The route metrics and the access log: subscribers of the request seam until close().
    this.#unobserve.push(this.#options.metrics.observeRequests(this));
    if (this.#options.accessLog) this.#unobserve.push(writeAccessLog(this, this.log));
    return this.#address;
  }

  /** Marks the server ready (/readyz 200) once everything it serves has started. */
  markReady(): void {
    this.#ready = true;
  }

  readonly #onRequest = (req: HttpRequest, res: HttpResponse): void => {
    const socket = req.socket as LastRequestSocket;
    if (socket[kLastRequestSeen] === true) {
      // Bytes after a request that asked to switch protocols are not HTTP to be trusted (node:http
      // frames them anyway, and so does the own server when Upgrade comes without Connection:
      // upgrade): not served. The connection closes after the answer to the Upgrade request (it
      // says `connection: close`), which must not be lost to this one: the server aborts it then.
      // node:http would frame and queue every request that follows for as long as that answer
      // streams: nothing more is read.
      socket.pause();
      return;
    }
    const ctx = new Context(req, res, this.#scope, performance.now());
    const live = this.#live;
    live.inflight++;
    (res as TrackedResponse)[kCtx] = ctx;
    (res as TrackedResponse)[kLive] = live;
    res.on('close', onResponseClose);
    this.#scope.metrics.inflight++;
    if (this.#draining) res.setHeader('connection', 'close');
    if (ctx.head.upgrade) {
      // Upgrade is ignored (RFC 9110 §7.8): the request is served as HTTP/1.1, and is the last.
      socket[kLastRequestSeen] = true;
      res.setHeader('connection', 'close');
    }
    observedRequest(this, ctx, this.#serve, this);
  };

  #serve(ctx: Context): void {
    try {
      respondWhenSettled(ctx, this.#route(ctx, (ctx.res as TrackedResponse)[kLive]!));
    } catch (err) {
      ctx.fail(err);
    }
  }

  #route(ctx: Context, live: LiveRoutes): ReturnType<RouteHandler> {
    // Which Host is meant is ambiguous (RFC 9112 §3.2): the origin guard must not pick one.
    if (ctx.head.hostCount > 1) throw new GatewayError('invalid_request', 'the request has more than one Host header');
    const path = ctx.path;
    if (live.mcpHandle !== null && path === live.mcp!.path) {
      ctx.mcp = true;
      ctx.route = 'mcp';
      ctx.routeMetrics = this.#mcpMetrics;
      this.#checkOrigin(ctx);
      if (ctx.head.via !== undefined) this.#options.hops?.refuseLoop(ctx.head.via);
      if (ctx.req.method === 'OPTIONS') return this.#preflight(ctx, 'GET, POST, DELETE, OPTIONS');
      if (this.#draining) throw new GatewayError('shutting_down', 'the gateway is shutting down', { headers: { 'retry-after': '1' } });
      return this.#authenticated(ctx, live.chain, live.mcpHandle);
    }
    switch (path) {
      case '/healthz':
      case '/readyz':
        return this.#builtin(ctx, this.#probe(path));
      case '/metrics':
      case '/status':
        if (this.#admin === null && (path === '/metrics' || live.mcp !== null)) {
          this.#builtin(ctx, null);
          // Host and Origin too: with anonymous incoming auth nothing else stands in the way of a
          // page that rebinds a name to the gateway (scrapers reaching it by another name use server.admin).
          this.#checkOrigin(ctx);
          return this.#authenticated(ctx, live.chain, (authed) => this.#publicAdminDocument(authed, live.chain));
        }
    }
    const match = live.router.find(ctx.req.method ?? 'GET', path);
    if (match === null) {
      ctx.route = 'not_found';
      ctx.routeMetrics = this.#notFoundMetrics;
      throw new GatewayError('not_found', `no route for ${ctx.req.method} ${path}`);
    }
    ctx.route = match.route.pattern;
    ctx.routeMetrics = match.route.metrics;
    ctx.params = match.params;
    if (match.route.def.anyOrigin === true) this.#checkHost(ctx);
    else this.#checkOrigin(ctx);
    const handler = match.route.def.handler as RouteHandler;
    return match.route.auth ? this.#authenticated(ctx, live.chain, handler) : handler(ctx);
  }

  #builtin<R>(ctx: Context, reply: R): R {
    ctx.route = ctx.path;
    ctx.routeMetrics = this.#builtinMetrics;
    return reply;
  }

  #probe(path: '/healthz' | '/readyz'): Reply {
    if (path === '/healthz') return Reply.json(200, { status: 'ok' });
    return this.#ready && !this.#draining ? Reply.json(200, { status: 'ready' }) : Reply.json(503, { status: this.#draining ? 'draining' : 'starting' });
  }

  /** /status or /metrics, wherever they are served. */
  readonly #adminDocument = (ctx: Context): Reply | Promise<Reply> => {
    if (ctx.path === '/status') return Reply.json(200, this.#live.mcp!.status());
    const registry = this.#options.metrics.registry;
    return registry.metrics().then((text) => new Reply(200, text, { 'content-type': registry.contentType }));
  };

  /**
   * An admin document on the public port: never to a caller a plugin view decides on (its key is
   * not null): the documents name every backend, its URL and errors, and its tools in metrics.
   */
  #publicAdminDocument(ctx: Context, chain: Chain): Reply | Promise<Reply> | GatewayError {
    if (chain.views?.some((view) => view.key(ctx) !== null) === true) {
      return new GatewayError('forbidden', `${ctx.path} names every backend: a plugin view restricts what this caller may know of them (spec.server.admin serves it apart)`, { status: 403 });
    }
    return this.#adminDocument(ctx);
  }

  /** The admin listener: the probes and the admin documents, behind its own Host check. */
  readonly #onAdminRequest = (req: HttpRequest, res: HttpResponse): void => {
    const ctx = new Context(req, res, this.#scope, performance.now());
    try {
      const admin = this.#admin!;
      const problem = ctx.head.hostCount > 1 ? new GatewayError('invalid_request', 'the request has more than one Host header') : admin.guard.check(ctx.head);
      if (problem !== null) throw problem;
      const path = ctx.path;
      let outcome: Reply | Promise<Reply>;
      if (path === '/healthz' || path === '/readyz') outcome = this.#probe(path);
      else if (path === '/metrics' || (path === '/status' && this.#live.mcp !== null)) outcome = this.#adminDocument(ctx);
      else throw new GatewayError('not_found', `no route for ${ctx.req.method} ${path} on the admin listener (it serves /healthz, /readyz, /metrics${this.#live.mcp !== null ? ', /status' : ''})`);
      respondWhenSettled(ctx, outcome);
    } catch (err) {
      ctx.fail(err);
    }
  };

  #checkHost(ctx: Context): void {
    const problem = this.#guard!.check({ host: ctx.head.host, origin: undefined });
    if (problem !== null) throw problem;
  }

  #checkOrigin(ctx: Context): void {
    const problem = this.#guard!.check(ctx.head);
    if (problem !== null) throw problem;
    const origin = ctx.head.origin;
    if (origin !== undefined) ctx.corsOrigin = origin;
  }

  #preflight(ctx: Context, methods: string): Reply {
    if (ctx.corsOrigin === null) return Reply.empty(204, { allow: methods });
    return Reply.empty(204, preflightHeaders(methods));
  }

  /**
   * authenticate, then authorize, then the handler; sync while every hook is. The branches are
   * written out rather than passed to `then()`: a closure per request is what the sync path saves.
   */
  #authenticated(ctx: Context, chain: Chain, handler: RouteHandler): ReturnType<RouteHandler> {
    const hooks = chain.authenticate;
    if (hooks === null) return this.#authorized(ctx, chain, handler);
    const outcome = runHooks(hooks, ctx, undefined);
    if (isPromise(outcome)) return outcome.then((settled) => (settled !== undefined ? settled : this.#authorized(ctx, chain, handler)));
    return outcome !== undefined ? outcome : this.#authorized(ctx, chain, handler);
  }

  #authorized(ctx: Context, chain: Chain, handler: RouteHandler): ReturnType<RouteHandler> {
    const hooks = chain.authorize;
    if (hooks === null) return handler(ctx);
    const outcome = runHooks(hooks, ctx, undefined);
    if (isPromise(outcome)) return outcome.then((settled) => (settled !== undefined ? settled : handler(ctx)));
    return outcome !== undefined ? outcome : handler(ctx);
  }

  /**
   * Graceful shutdown: stop accepting, end standalone SSE streams cleanly, let in-flight requests
   * finish within the grace period, then close what is left.
   */
  async close(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    const admin = this.#admin;
    const closed = Promise.all([
      new Promise<void>((resolve) => this.http.close(() => resolve())),
      admin === null ? undefined : new Promise<void>((resolve) => admin.http.close(() => resolve())),
    ]);
    admin?.http.closeAllConnections();
    this.http.closeIdleConnections();
    for (const hook of this.#options.shutdown ?? []) hook.drain();
    const deadline = Date.now() + this.#options.shutdownGraceMs;
    const metrics = this.#options.metrics;
    while (metrics.inflight > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      this.http.closeIdleConnections();
    }
    if (metrics.inflight > 0) this.log.warn({ inflight: metrics.inflight }, 'grace period over: closing the remaining requests');
    for (const hook of this.#options.shutdown ?? []) hook.abort();
    this.http.closeAllConnections();
    await closed;
    for (const unobserve of this.#unobserve.splice(0)) unobserve();
  }
}
