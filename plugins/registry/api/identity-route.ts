/**
 * `GET /v1/me`: who the registry thinks the caller is, `{subject, roles}`. Roles are resolved
 * under full authorization only (auth-only mode does not resolve them: an empty list). There is
 * no caller identity in anonymous mode: 401.
 */
import { Reply, type RouteDef } from '@gatehouse-mcp/gateway';
import { callerOf } from '../../registry-authz/authz-plugin.ts';
import { endpoint } from './endpoint.ts';
import { registryError } from '../errors.ts';

export function identityRoute(): RouteDef {
  return endpoint('GET', '/v1/me', function replyIdentity(ctx) {
    const caller = callerOf(ctx);
    if (caller.mode === 'anonymous' || caller.subject === null) {
      throw registryError('anonymous_mode', 'the registry runs in anonymous mode (auth.mode: anonymous): there is no caller identity');
    }
    return Reply.json(200, { subject: caller.subject, roles: caller.roles });
  });
}
