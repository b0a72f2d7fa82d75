/**
 * What the server does when a response is done (finished, or the client went away): the
 * request leaves the in-flight counts and its session's request limit, its backend exchange is
 * cancelled if still running, and the request seam is told how it ended (the route metrics and
 * the access log are subscribers of it).
 */
import { performance } from 'node:perf_hooks';
import type { Context, RequestScope } from '../plugin-api/context.ts';
import type { HttpResponse } from '../http/types.ts';
import type { GatewayMetrics } from '../observe/metrics.ts';
import type { LiveRoutes } from './live-routes.ts';
import type { SessionRequestLimit } from './session-request-limit.ts';
import { endObservedRequest } from './request-observation.ts';

export const kCtx = Symbol('gatehouse.ctx');
export const kLive = Symbol('gatehouse.live');
export type TrackedResponse = HttpResponse & { [kCtx]?: Context; [kLive]?: LiveRoutes };

/** What every request of one gateway server shares. */
export interface ServerScope extends RequestScope {
  readonly metrics: GatewayMetrics;
  readonly accessLog: boolean;
  readonly sessionLimit: SessionRequestLimit | null;
}

/** The response's `close` listener (one module-level function, no closure per request). */
export function onResponseClose(this: TrackedResponse): void {
  const ctx = this[kCtx]!;
  this[kLive]!.inflight--;
  ctx.inflight?.cancel();
  const scope = ctx.scope as ServerScope;
  if (ctx.countedSession !== null) scope.sessionLimit!.leave(ctx.countedSession, ctx.countedPrincipal);
  scope.metrics.inflight--;
  // 499 (nginx's "client closed request") only when the client left before any answer.
  const status = this.headersSent ? this.statusCode : 499;
  if (ctx.record !== null) endObservedRequest(ctx.record, ctx, status, (performance.now() - ctx.startedAt) / 1000);
}
