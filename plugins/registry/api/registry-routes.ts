/**
 * The admin API of registries (manageRegistries or superAdmin), scoped by claims like sources:
 * filtered lists, 404 for hidden ones, claims of a new registry a subset of the caller's, and
 * the caller must satisfy a registry's claims to change or delete it. A registry may list only
 * sources the caller can access (others are "unknown"), and at most one managed source.
 */
import { type Context, GatewayError, Reply, type RouteDef } from '@gatehouse-mcp/gateway';
import { registryBodySchema } from '../config/registry-schema.ts';
import { canAccess } from '../../registry-authz/caller.ts';
import { callerOf } from '../../registry-authz/authz-plugin.ts';
import { creationClaimsProblem } from '../../registry-authz/publish-rules.ts';
import { checkPathName, parseBody } from './body-schema.ts';
import { endpoint } from './endpoint.ts';
import { parseListQuery } from './list-query.ts';
import { entryList, registryView } from './shapes.ts';
import { BODY, REGISTRY, required } from './slots.ts';
import { configManaged } from './source-routes.ts';
import { entryFilterOf, param, registrySteps, requireRole, type ApiDeps } from './steps.ts';
import { registryError } from '../errors.ts';

const q = (text: string): string => JSON.stringify(text);

export function registryRoutes(deps: ApiDeps): RouteDef[] {
  const { store } = deps;
  const { loadScopedRegistry, readJsonBody } = registrySteps(deps);
  const requireManageRegistries = requireRole('manageRegistries');

  async function listRegistries(ctx: Context): Promise<Reply> {
    const caller = callerOf(ctx);
    const registries = (await store.registries.list()).filter((registry) => canAccess(caller, registry.claims));
    return Reply.json(200, { registries: registries.map(registryView) });
  }

  function replyRegistry(ctx: Context): Reply {
    return Reply.json(200, registryView(required(ctx.get(REGISTRY), 'registry')));
  }

  async function putRegistry(ctx: Context): Promise<Reply> {
    const name = param(ctx, 'name');
    const caller = callerOf(ctx);
    const body = parseBody(registryBodySchema, ctx.get(BODY), 'registry');
    checkPathName(name, body.name, 'registry');
    const existing = await store.registries.get(name);
    if (existing !== null) {
      // Like GET and DELETE: a registry the caller cannot see is not there (no disclosure).
      if (!canAccess(caller, existing.claims)) throw new GatewayError('not_found', `registry ${q(name)} not found`);
      if (existing.origin === 'config') throw configManaged('registry', name);
    }
    const claims = body.claims ?? {};
    const problem = creationClaimsProblem(caller, claims, 'registry');
    if (problem !== null) throw problem;
    if (!caller.unrestricted) {
      const sources = await Promise.all(body.sources.map((source) => store.sources.get(source)));
      const hidden = body.sources.filter((_, i) => sources[i] === null || !canAccess(caller, sources[i]!.claims));
      if (hidden.length > 0) throw registryError('unknown_source', `unknown source${hidden.length === 1 ? '' : 's'} ${hidden.map(q).join(', ')}: create ${hidden.length === 1 ? 'it' : 'them'} first`);
    }
    const { created, record } = await store.registries.put({ name, sources: body.sources, claims }, 'api');
    return Reply.json(created ? 201 : 200, registryView(record));
  }

  async function deleteRegistry(ctx: Context): Promise<Reply> {
    const registry = required(ctx.get(REGISTRY), 'registry');
    if (registry.origin === 'config') throw configManaged('registry', registry.name);
    if (!(await store.registries.delete(registry.name))) throw new GatewayError('not_found', `registry ${q(registry.name)} not found`);
    return Reply.empty(204);
  }

  async function listRegistryEntries(ctx: Context): Promise<Reply> {
    const registry = required(ctx.get(REGISTRY), 'registry');
    const { cursor, limit } = parseListQuery(ctx.query, { limit: 100, maxLimit: 500 });
    const page = await store.listing.registryEntries(registry.name, { filter: entryFilterOf(callerOf(ctx)), cursor, limit });
    return Reply.json(200, entryList(page, true));
  }

  return [
    endpoint('GET', '/v1/registries', requireManageRegistries, listRegistries),
    endpoint('GET', '/v1/registries/:name', requireManageRegistries, loadScopedRegistry, replyRegistry),
    endpoint('PUT', '/v1/registries/:name', requireManageRegistries, readJsonBody, putRegistry),
    endpoint('DELETE', '/v1/registries/:name', requireManageRegistries, loadScopedRegistry, deleteRegistry),
    endpoint('GET', '/v1/registries/:name/entries', requireManageRegistries, loadScopedRegistry, listRegistryEntries),
  ];
}
