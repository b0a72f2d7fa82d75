/**
 * Publishing and deleting entry versions, in the registry's managed source. Order of checks:
 * the registry exists (404), the registry gate (403), the manageEntries role (403), the registry
 * has a managed source (403 `not_publishable`), the caller satisfies that source's claims (403
 * `claims_not_held`, rule 0 of publish-rules.ts), then the body (a server's document validated
 * against the official schema: model/publish-payload.ts), then the other claims rules inside the
 * publishing transaction.
 *
 * Deleting a version leaves a tombstone (answered with `status: "deleted"`); a deleted version
 * cannot be published again (409 `version_exists`): versions are immutable.
 */
import { type Context, GatewayError, Reply, type RouteDef } from '@gatehouse-mcp/gateway';
import { NO_CLAIMS } from '../../registry-authz/claims.ts';
import { callerOf } from '../../registry-authz/authz-plugin.ts';
import { managedSourceClaimsProblem, publishClaimsProblem } from '../../registry-authz/publish-rules.ts';
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

  /** Rule 0: the caller satisfies the claims of the managed source written to. */
  async function gateManagedSource(ctx: Context): Promise<void> {
    const caller = callerOf(ctx);
    if (caller.unrestricted) return;
    const registry = required(ctx.get(REGISTRY), 'registry');
    const source = await store.sources.get(registry.managedSource!);
    const problem = managedSourceClaimsProblem(caller, source?.claims ?? NO_CLAIMS, registry.name);
    if (problem !== null) throw problem;
  }

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
      return Reply.json(200, versionResponse(deleted));
    };

  return [
    endpoint('POST', '/:registry/v0.1/publish', loadRegistry, gateRegistry, requireManageEntries, requireManagedSource, gateManagedSource, readJsonBody, publishVersion),
    endpoint('DELETE', '/:registry/v0.1/servers/:name/versions/:version', loadRegistry, gateRegistry, requireManageEntries, requireManagedSource, gateManagedSource, deleteVersion('server')),
    endpoint('DELETE', '/:registry/v0.1/skills/:name/versions/:version', loadRegistry, gateRegistry, requireManageEntries, requireManagedSource, gateManagedSource, deleteVersion('skill')),
  ];
}
