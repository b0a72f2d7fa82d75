/**
 * What the gateway server routes requests to, as compiled once per configuration: the plugin
 * routes' router, and the MCP endpoint's handler behind the per-session request limit. A reload
 * replaces it whole (GatewayServer.swap); a request keeps the one it started on to its end.
 */
import type { HookOutcome } from './chain.ts';
import type { Chain } from './chain.ts';
import type { Context } from '../plugin-api/context.ts';
import { GatewayError } from '../base/errors.ts';
import type { McpEndpoint } from './mcp-endpoint.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';
import type { Reply } from '../plugin-api/reply.ts';
import { Router } from './router.ts';
import type { SessionRequestLimit } from './session-request-limit.ts';

/** What answers a request once it is routed: the MCP endpoint, an admin document, a plugin route's handler. */
export type RouteHandler = (ctx: Context) => HookOutcome | Promise<HookOutcome> | Reply | GatewayError | void;

/**
 * What the server routes requests to, replaced as a whole by a reload: the chain (auth hooks and
 * plugin routes), the MCP endpoint, the public URLs the origin guard accepts.
 */
export interface Routes {
  readonly chain: Chain;
  readonly mcp: McpEndpoint | null;
  readonly publicUrls: readonly string[];
}

/** Routes compiled; `inflight` counts the requests on them, for the drain after a reload. */
export interface LiveRoutes extends Routes {
  readonly router: Router;
  readonly mcpHandle: RouteHandler | null;
  inflight: number;
}

export function compileRoutes(routes: Routes, metrics: GatewayMetrics, limit: SessionRequestLimit | null): LiveRoutes {
  const router = new Router();
  for (const route of routes.chain.routes) router.add(route, route.plugin, metrics.route(route.path));
  const mcp = routes.mcp;
  let mcpHandle: RouteHandler | null = null;
  if (mcp !== null) {
    // After authentication (the chain runs first): only the session's principal counts against it.
    mcpHandle =
      limit === null
        ? (ctx) => mcp.handle(ctx)
        : (ctx) => {
            const session = ctx.head.sessionId;
            // Not once the response is gone (the client left while an async authenticate or
            // authorize hook ran): its close listener has run already and would never leave the
            // count, and `max` such requests would lock the session out for good. A response is
            // destroyed before its close is emitted, so one open here leaves the count later.
            if (session !== undefined && !ctx.res.destroyed) {
              // Counted per principal and session: a party that learned a session's id but is
              // not its principal cannot fill its count (the endpoint refuses it the session).
              const who = ctx.principal === null ? '' : ctx.principal.key;
              if (!limit.enter(session, who)) return tooManySessionRequests(metrics, limit.max);
              ctx.countedSession = session;
              ctx.countedPrincipal = who;
            }
            return mcp.handle(ctx);
          };
  }
  return { chain: routes.chain, mcp, publicUrls: routes.publicUrls, router, mcpHandle, inflight: 0 };
}

/** Resolves once no request runs on `live` (true), or at `deadline` (false: some still were). */
export async function drainedBy(live: LiveRoutes, deadline: number): Promise<boolean> {
  while (live.inflight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  return live.inflight === 0;
}

function tooManySessionRequests(metrics: GatewayMetrics, max: number): GatewayError {
  metrics.limited('session_requests');
  return new GatewayError('too_many_requests', `the session has ${max} requests in flight, as many as server.maxSessionRequests allows: retry when one has ended`, {
    headers: { 'retry-after': '1' },
  });
}
