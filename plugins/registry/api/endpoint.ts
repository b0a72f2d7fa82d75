/**
 * An endpoint is a readable list of small named steps (the style of oidc-provider's actions):
 *
 *   endpoint('GET', '/v1/sources/:name', requireRole('manageSources'), loadSource, replySource)
 *
 * Each step reads the request and the slots earlier steps filled, and either continues
 * (returns nothing), answers (returns a Reply), or refuses (throws a GatewayError). Steps stay
 * synchronous until one returns a promise.
 */
import {
  type Context,
  type HttpMethod,
  mapMaybePromise,
  type MaybePromise,
  type Reply,
  type RouteDef,
} from '@gatehouse-mcp/gateway';

export type Step = (ctx: Context) => MaybePromise<Reply | void>;

function runSteps(steps: readonly Step[], ctx: Context, from: number): MaybePromise<Reply | undefined> {
  for (let i = from; i < steps.length; i++) {
    const result = steps[i]!(ctx);
    if (result === undefined) continue;
    return mapMaybePromise(result, (settled) => (settled === undefined ? runSteps(steps, ctx, i + 1) : settled));
  }
  throw new Error(`internal error: the endpoint ${ctx.route} ended without an answer`);
}

export function endpoint(method: HttpMethod, path: string, ...steps: Step[]): RouteDef {
  return { method, path, handler: (ctx) => runSteps(steps, ctx, 0) };
}
