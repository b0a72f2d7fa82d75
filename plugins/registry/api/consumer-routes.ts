/**
 * The consumer API of a registry (official MCP registry v0.1): list servers or skills, list the
 * versions of one (newest publication first), read one version (`latest` allowed). Every
 * endpoint passes the registry gate (layer 1) before touching data, and every query applies the
 * entry filter (layer 2). Deleted versions are hidden unless `include_deleted=true` (or, for the
 * list, `updated_since`): see list-query.ts.
 */
import { type Context, GatewayError, Reply, type RouteDef } from '@gatehouse-mcp/gateway';
import { callerOf } from '../../registry-authz/authz-plugin.ts';
import type { EntryKind } from '../store/records.ts';
import { endpoint } from './endpoint.ts';
import { includeDeletedOf, parseListQuery } from './list-query.ts';
import { versionList, versionResponse } from './shapes.ts';
import { REGISTRY, required } from './slots.ts';
import { entryFilterOf, param, registrySteps, type ApiDeps } from './steps.ts';

const LISTS: Readonly<Record<EntryKind, 'servers' | 'skills'>> = { server: 'servers', skill: 'skills' };

function includeDeletedParam(ctx: Context): boolean {
  return includeDeletedOf(new URLSearchParams(ctx.query).get('include_deleted'));
}

export function consumerRoutes(deps: ApiDeps): RouteDef[] {
  const { store } = deps;
  const { loadRegistry, gateRegistry } = registrySteps(deps);

  const listVersions = (kind: EntryKind) =>
    async function listVersionsStep(ctx: Context): Promise<Reply> {
      const registry = required(ctx.get(REGISTRY), 'registry');
      const query = parseListQuery(ctx.query);
      const page = await store.listing.versions({ registry: registry.name, kind, filter: entryFilterOf(callerOf(ctx)), ...query });
      return Reply.json(200, versionList(LISTS[kind], page.items, page.nextCursor));
    };

  const listVersionsOfName = (kind: EntryKind) =>
    async function listVersionsOfNameStep(ctx: Context): Promise<Reply> {
      const registry = required(ctx.get(REGISTRY), 'registry');
      const name = param(ctx, 'name');
      const versions = await store.entries.versionsOf(registry.name, kind, name, entryFilterOf(callerOf(ctx)), includeDeletedParam(ctx));
      if (versions.length === 0) throw new GatewayError('not_found', `${kind} ${JSON.stringify(name)} not found in registry ${JSON.stringify(registry.name)}`);
      return Reply.json(200, versionList(LISTS[kind], versions));
    };

  const getVersion = (kind: EntryKind) =>
    async function getVersionStep(ctx: Context): Promise<Reply> {
      const registry = required(ctx.get(REGISTRY), 'registry');
      const name = param(ctx, 'name');
      const version = param(ctx, 'version');
      const found = await store.entries.getVersion(registry.name, kind, name, version, entryFilterOf(callerOf(ctx)), includeDeletedParam(ctx));
      if (found === null) throw new GatewayError('not_found', `version ${JSON.stringify(version)} of ${kind} ${JSON.stringify(name)} not found in registry ${JSON.stringify(registry.name)}`);
      return Reply.json(200, versionResponse(found));
    };

  return [
    endpoint('GET', '/:registry/v0.1/servers', loadRegistry, gateRegistry, listVersions('server')),
    endpoint('GET', '/:registry/v0.1/servers/:name/versions', loadRegistry, gateRegistry, listVersionsOfName('server')),
    endpoint('GET', '/:registry/v0.1/servers/:name/versions/:version', loadRegistry, gateRegistry, getVersion('server')),
    endpoint('GET', '/:registry/v0.1/skills', loadRegistry, gateRegistry, listVersions('skill')),
    endpoint('GET', '/:registry/v0.1/skills/:name/versions', loadRegistry, gateRegistry, listVersionsOfName('skill')),
    endpoint('GET', '/:registry/v0.1/skills/:name/versions/:version', loadRegistry, gateRegistry, getVersion('skill')),
  ];
}
