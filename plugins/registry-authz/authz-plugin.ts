/**
 * The registry-authz plugin: in the authorize phase it turns the authenticated principal into
 * the request's `Caller` (mode, claims, resolved roles), which every later check of the request
 * consults. Role resolution happens once per request; the checks themselves are the pure
 * functions of caller.ts and publish-rules.ts, applied by the registry's endpoints.
 */
import { type Context, definePlugin, defineSlot, GatewayError } from '@gatehouse-mcp/gateway';
import { badBearerRequest } from '../incoming-auth/errors.ts';
import { ANONYMOUS_CALLER, authenticatedCaller, type AuthzMode, type Caller } from './caller.ts';
import type { RoleRules } from './roles.ts';

export const CALLER = defineSlot<Caller>('registry.caller');

/** The startup warnings of the two modes without claims filtering (plugins/registry/README.md, `auth.authz.roles`). */
const AUTH_ONLY_WARNING = 'authorization is not configured and per-entry claims filtering is disabled (auth-only mode)';
const METRICS_REFUSED = '/metrics names every source, including those scoped to claims you do not hold: it needs superAdmin (or scrape it on the server.admin listener)';
const ANONYMOUS_WARNING = 'auth.mode is anonymous: no authentication, every source, registry and entry is accessible to anyone (development only)';

export interface RegistryAuthzConfig {
  readonly mode: AuthzMode;
  readonly roles: RoleRules;
}

/** The request's caller (set in the authorize phase of every authenticated route). */
export function callerOf(ctx: Context): Caller {
  const caller = ctx.get(CALLER);
  if (caller === undefined) throw new GatewayError('internal_error', 'internal error', { detail: 'no caller: the registry-authz plugin did not run' });
  return caller;
}

export const registryAuthz = definePlugin<RegistryAuthzConfig>({
  name: 'registry-authz',
  create(config, host) {
    const { mode, roles } = config;
    return {
      name: 'registry-authz',
      authorize(ctx) {
        if (mode === 'anonymous') {
          ctx.set(CALLER, ANONYMOUS_CALLER);
          return undefined;
        }
        const principal = ctx.principal;
        if (principal === null) return badBearerRequest('this resource requires a bearer token in the Authorization header');
        const caller = authenticatedCaller(mode, principal.subject, principal.claims, roles);
        // /metrics on the main listener names every source and counts its entries: under full
        // authorization it is the superAdmin's (sources are 404 to callers outside their claims).
        if (ctx.path === '/metrics' && !caller.unrestricted) throw new GatewayError('insufficient_permissions', METRICS_REFUSED);
        ctx.set(CALLER, caller);
        return undefined;
      },
      start() {
        if (mode === 'authOnly') host.log.warn(AUTH_ONLY_WARNING);
        if (mode === 'anonymous') host.log.warn(ANONYMOUS_WARNING);
      },
    };
  },
});
