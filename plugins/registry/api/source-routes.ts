/**
 * The admin API of sources (manageSources or superAdmin), scoped by claims: a list shows only
 * the sources the caller's claims satisfy, a hidden source is 404 (never 403), a new source's
 * claims must be a subset of the caller's, and changing or deleting one needs the caller to
 * satisfy its current claims. Sources defined in the config file are read-only here (409
 * `config_managed`). Through the API, sources are managed ones: file sources read the server's
 * disk and are defined in the config file only; git sources are not available yet.
 */
import type { Context } from '../../../core/context.ts';
import { GatewayError } from '../../../core/errors.ts';
import type { RouteDef } from '../../../core/plugin.ts';
import { Reply } from '../../../core/reply.ts';
import { sourceBodySchema } from '../config/registry-schema.ts';
import { toSourceDefinition } from '../config/registry-config.ts';
import { canAccess } from '../../registry-authz/caller.ts';
import { callerOf } from '../../registry-authz/authz-plugin.ts';
import { creationClaimsProblem } from '../../registry-authz/publish-rules.ts';
import { checkPathName, parseBody } from './body-schema.ts';
import { endpoint } from './endpoint.ts';
import { parseListQuery } from './list-query.ts';
import { entryList, sourceView } from './shapes.ts';
import { BODY, SOURCE, required } from './slots.ts';
import { entryFilterOf, param, registrySteps, requireRole, type ApiDeps } from './steps.ts';
import { registryError } from '../errors.ts';

const q = (text: string): string => JSON.stringify(text);

export function configManaged(kind: 'source' | 'registry', name: string): GatewayError {
  return registryError('config_managed', `${kind} ${q(name)} is defined in the configuration file: change it there (and restart)`);
}

export function sourceRoutes(deps: ApiDeps): RouteDef[] {
  const { store } = deps;
  const { loadSource, readJsonBody } = registrySteps(deps);
  const requireManageSources = requireRole('manageSources');

  async function listSources(ctx: Context): Promise<Reply> {
    const caller = callerOf(ctx);
    const sources = (await store.sources.list()).filter((source) => canAccess(caller, source.claims));
    return Reply.json(200, { sources: sources.map(sourceView) });
  }

  function replySource(ctx: Context): Reply {
    return Reply.json(200, sourceView(required(ctx.get(SOURCE), 'source')));
  }

  async function putSource(ctx: Context): Promise<Reply> {
    const name = param(ctx, 'name');
    const caller = callerOf(ctx);
    const body = parseBody(sourceBodySchema, ctx.get(BODY), 'source');
    checkPathName(name, body.name, 'source');
    const source = toSourceDefinition(body, name, '/');
    if (source.kind === 'file') throw new GatewayError('invalid_request', 'file sources read a file on the server: define them in the configuration file, not through the API');
    if (source.kind === 'git') throw registryError('not_available', 'git sources are not available in this version yet');
    const existing = await store.sources.get(name);
    if (existing !== null) {
      if (!canAccess(caller, existing.claims)) throw registryError('claims_not_satisfied', `a source named ${q(name)} exists and your token does not satisfy its claims`);
      if (existing.origin === 'config') throw configManaged('source', name);
    }
    const problem = creationClaimsProblem(caller, source.claims, 'source');
    if (problem !== null) throw problem;
    const { created, record } = await store.sources.put(source, 'api');
    return Reply.json(created ? 201 : 200, sourceView(record));
  }

  async function deleteSource(ctx: Context): Promise<Reply> {
    const source = required(ctx.get(SOURCE), 'source');
    if (source.origin === 'config') throw configManaged('source', source.name);
    if (!(await store.sources.delete(source.name))) throw new GatewayError('not_found', `source ${q(source.name)} not found`);
    return Reply.empty(204);
  }

  async function listSourceEntries(ctx: Context): Promise<Reply> {
    const source = required(ctx.get(SOURCE), 'source');
    const { cursor, limit } = parseListQuery(ctx.query, { limit: 100, maxLimit: 500 });
    const page = await store.listing.sourceEntries(source.name, { filter: entryFilterOf(callerOf(ctx)), cursor, limit });
    return Reply.json(200, entryList(page, false));
  }

  return [
    endpoint('GET', '/v1/sources', requireManageSources, listSources),
    endpoint('GET', '/v1/sources/:name', requireManageSources, loadSource, replySource),
    endpoint('PUT', '/v1/sources/:name', requireManageSources, readJsonBody, putSource),
    endpoint('DELETE', '/v1/sources/:name', requireManageSources, loadSource, deleteSource),
    endpoint('GET', '/v1/sources/:name/entries', requireManageSources, loadSource, listSourceEntries),
  ];
}
