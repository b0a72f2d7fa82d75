/**
 * Publishing and deleting entry versions, in the registry's managed source. Order of checks:
 * the registry exists (404), the registry gate (403), the manageEntries role (403), the registry
 * has a managed source (403 `not_publishable`), then the body, then the claims rules
 * (publish-rules.ts) inside the publishing transaction.
 */
import type { Context } from '../../../core/context.ts';
import { GatewayError } from '../../../core/errors.ts';
import type { RouteDef } from '../../../core/plugin.ts';
import { Reply } from '../../../core/reply.ts';
import { NO_CLAIMS } from '../../registry-authz/claims.ts';
import { callerOf } from '../../registry-authz/authz-plugin.ts';
import { publishClaimsProblem } from '../../registry-authz/publish-rules.ts';
import { parsePublishPayload } from '../model/publish-payload.ts';
import type { EntryKind } from '../store/records.ts';
import { endpoint } from './endpoint.ts';
import { versionResponse } from './shapes.ts';
import { BODY, REGISTRY, required } from './slots.ts';
import { entryFilterOf, param, registrySteps, requireRole, type ApiDeps } from './steps.ts';

const PATHS: Readonly<Record<EntryKind, string>> = { server: 'servers', skill: 'skills' };

export function publishRoutes(deps: ApiDeps): RouteDef[] {
  const { store } = deps;
  const { loadRegistry, gateRegistry, requireManagedSource, readJsonBody } = registrySteps(deps);
  const requireManageEntries = requireRole('manageEntries');

  async function publishVersion(ctx: Context): Promise<Reply> {
    const registry = required(ctx.get(REGISTRY), 'registry');
    const caller = callerOf(ctx);
    const payload = parsePublishPayload(ctx.get(BODY));
    const claims = payload.claims ?? NO_CLAIMS;
    const published = await store.entries.publish(
      { source: registry.managedSource!, kind: payload.kind, name: payload.name, version: payload.version, document: payload.document, claims },
      (existing) => publishClaimsProblem(caller, claims, existing),
    );
    const location = `/${encodeURIComponent(registry.name)}/v0.1/${PATHS[payload.kind]}/${encodeURIComponent(payload.name)}/versions/${encodeURIComponent(payload.version)}`;
    return Reply.json(201, versionResponse(published), { location });
  }

  const deleteVersion = (kind: EntryKind) =>
    async function deleteVersionStep(ctx: Context): Promise<Reply> {
      const registry = required(ctx.get(REGISTRY), 'registry');
      const name = param(ctx, 'name');
      const version = param(ctx, 'version');
      const deleted = await store.entries.deleteVersion(registry.managedSource!, kind, name, version, entryFilterOf(callerOf(ctx)));
      if (deleted === null) {
        throw new GatewayError('not_found', `version ${JSON.stringify(version)} of ${kind} ${JSON.stringify(name)} not found in the managed source of registry ${JSON.stringify(registry.name)}`);
      }
      const response = versionResponse(deleted) as { _meta: Record<string, { status: string }> };
      for (const meta of Object.values(response._meta)) meta.status = 'deleted';
      return Reply.json(200, response);
    };

  return [
    endpoint('POST', '/:registry/v0.1/publish', loadRegistry, gateRegistry, requireManageEntries, requireManagedSource, readJsonBody, publishVersion),
    endpoint('DELETE', '/:registry/v0.1/servers/:name/versions/:version', loadRegistry, gateRegistry, requireManageEntries, requireManagedSource, deleteVersion('server')),
    endpoint('DELETE', '/:registry/v0.1/skills/:name/versions/:version', loadRegistry, gateRegistry, requireManageEntries, requireManagedSource, deleteVersion('skill')),
  ];
}
