/**
 * The registry's changes, published on the seam for an audit trail (`gatehouse:registry:change`,
 * publishRegistryChange): a publish, a delete of a version, and the admin API's changes (a source
 * or registry put or deleted, a sync asked for). Each route that changes something is wrapped:
 * when its steps answer, or refuse (a role missing, claims not held, a version that exists), the
 * change is published with who asked, from where, what it named and how it ended. A request turned
 * away before the route (no token, a token refused) is the audit trail's own record of the
 * request (`http_request`, denied). The API writes no record itself.
 */
import { GatewayError, observedPrincipal, publishRegistryChange, type AuditOutcome, type Context, type Reply, type RouteDef } from '@gatehouse-mcp/gateway';
import { BODY } from './slots.ts';

/** The event type of a route that changes something, by `METHOD path`. */
const CHANGES: Readonly<Record<string, string>> = {
  'POST /:registry/v0.1/publish': 'registry_publish',
  'DELETE /:registry/v0.1/servers/:name/versions/:version': 'registry_delete',
  'DELETE /:registry/v0.1/skills/:name/versions/:version': 'registry_delete',
  'PUT /v1/sources/:name': 'registry_admin_change',
  'DELETE /v1/sources/:name': 'registry_admin_change',
  'POST /v1/sources/:name/sync': 'registry_admin_change',
  'PUT /v1/registries/:name': 'registry_admin_change',
  'DELETE /v1/registries/:name': 'registry_admin_change',
};

const MAX_NAME = 256;

/** What the change named: the path's parameters, and a publish's name and version from its body. */
function detailsOf(ctx: Context, action: string): Record<string, string> {
  const details: Record<string, string> = { action };
  for (const [key, value] of Object.entries(ctx.params ?? {})) details[key] = String(value).slice(0, MAX_NAME);
  const body = ctx.get(BODY) as { name?: unknown; version?: unknown } | undefined;
  if (action.endsWith('/publish') && body !== null && typeof body === 'object') {
    if (typeof body.name === 'string') details.name = body.name.slice(0, MAX_NAME);
    if (typeof body.version === 'string') details.version = body.version.slice(0, MAX_NAME);
  }
  return details;
}

function outcomeOf(status: number): AuditOutcome {
  if (status < 400) return 'success';
  if (status === 401 || status === 403) return 'denied';
  return status >= 500 ? 'error' : 'failure';
}

function publish(origin: object, type: string, action: string, ctx: Context, status: number, errorCode: string | null): void {
  publishRegistryChange(() => ({
    origin,
    type,
    outcome: outcomeOf(status),
    time: Date.now(),
    requestId: ctx.requestId,
    principal: observedPrincipal(ctx.principal),
    clientId: null,
    clientAddress: ctx.clientAddress,
    errorCode,
    details: detailsOf(ctx, action),
  }));
}

function audited(route: RouteDef, origin: object, type: string, action: string): RouteDef {
  const handler = route.handler;
  const wrapped = (ctx: Context): ReturnType<typeof handler> => {
    const failed = (err: unknown): never => {
      const error = err instanceof GatewayError ? err : null;
      publish(origin, type, action, ctx, error?.status ?? 500, error?.code ?? 'internal_error');
      throw err;
    };
    const answered = (reply: Reply | undefined): Reply | undefined => {
      publish(origin, type, action, ctx, reply?.status ?? 200, null);
      return reply;
    };
    let result: ReturnType<typeof handler>;
    try {
      result = handler(ctx);
    } catch (err) {
      return failed(err);
    }
    if (result instanceof Promise) return result.then(answered as never, failed) as ReturnType<typeof handler>;
    return answered(result as Reply | undefined) as ReturnType<typeof handler>;
  };
  return { ...route, handler: wrapped as typeof handler };
}

/** The routes, those that change something wrapped to publish each change. */
export function auditedRoutes(routes: readonly RouteDef[], origin: object): RouteDef[] {
  return routes.map((route) => {
    const action = `${String(route.method)} ${route.path}`;
    const type = CHANGES[action];
    return type === undefined ? route : audited(route, origin, type, action);
  });
}
