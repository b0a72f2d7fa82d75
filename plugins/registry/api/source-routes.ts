/**
 * The admin API of sources (manageSources or superAdmin), scoped by claims: a list shows only
 * the sources the caller's claims satisfy, a hidden source is 404 (never 403), a new source's
 * claims must be a subset of the caller's, and changing or deleting one needs the caller to
 * satisfy its current claims (a source the caller cannot see is 404 for PUT as for GET). Sources
 * defined in the config file are read-only here (409 `config_managed`).
 *
 * Through the API: managed, git, api and file sources. What the API creates is held tighter than
 * what the config file defines, because a manageSources caller is not the server's operator:
 * no secret references (credentials stay with the config file, or a caller could send them to
 * a host of their choosing), file paths only under `sync.fileRoot`, cluster sources only in the
 * config file, a sync interval of at least a minute; the readers refuse private addresses unless
 * `sync.allowPrivateAddresses`.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { type Context, GatewayError, Reply, type RouteDef } from '@gatehouse-mcp/gateway';
import { sourceBodySchema } from '../config/registry-schema.ts';
import { formatDuration, toSourceDefinition, type SourceDefinition } from '../config/registry-config.ts';
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

/** How long `POST /v1/sources/{name}/sync` waits for the sync before answering 202. */
const SYNC_WAIT_MS = 30_000;

/**
 * The shortest `syncPolicy.interval` of a source created through the API: each sync reaches a
 * host the caller names and takes one of the `sync.maxConcurrent` slots, so a caller's source
 * must not sync in a loop (a failure backs off up to the interval, so it bounds retries too).
 */
const MIN_API_INTERVAL_MS = 60_000;

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
    const existing = await store.sources.get(name);
    if (existing !== null) {
      // Like GET and DELETE: a source the caller cannot see is not there (no disclosure).
      if (!canAccess(caller, existing.claims)) throw new GatewayError('not_found', `source ${q(name)} not found`);
      if (existing.origin === 'config') throw configManaged('source', name);
    }
    await checkApiSource(source);
    const problem = creationClaimsProblem(caller, source.claims, 'source');
    if (problem !== null) throw problem;
    const { created, record } = await store.sources.put(source, 'api');
    await deps.sync?.refresh();
    return Reply.json(created ? 201 : 200, sourceView((await store.sources.get(name)) ?? record));
  }

  /** What only the config file may define, refused with the reason. */
  async function checkApiSource(source: SourceDefinition): Promise<void> {
    if (source.kind === 'cluster') throw new GatewayError('invalid_request', 'cluster sources read the cluster or the server\'s disk with the server\'s own credentials: define them in the configuration file');
    if (source.syncIntervalMs !== null && source.syncIntervalMs < MIN_API_INTERVAL_MS) {
      throw new GatewayError('invalid_request', `syncPolicy.interval must be at least ${formatDuration(MIN_API_INTERVAL_MS)} for sources created through the API (got ${formatDuration(source.syncIntervalMs)}): POST /v1/sources/{name}/sync syncs one now`);
    }
    if (source.git?.auth != null || source.api?.tokenSecretRef != null) {
      throw new GatewayError('invalid_request', 'secret references are not accepted through the API (the secret could be sent to any host): define sources with credentials in the configuration file');
    }
    if (source.git !== null && !/^https?:\/\//.test(source.git.repository)) {
      throw new GatewayError('invalid_request', `git.repository: sources created through the API read https:// (or http://) repositories only (got ${q(source.git.repository)})`);
    }
    if (source.file !== null) await checkFileRoot(source.file.path);
  }

  async function checkFileRoot(path: string): Promise<void> {
    const root = deps.syncSettings?.fileRoot ?? null;
    if (root === null) throw new GatewayError('invalid_request', 'file sources read the server\'s disk: the server accepts them through the API only under a directory its configuration names (sync.fileRoot), and it names none');
    if (!isAbsolute(path)) throw new GatewayError('invalid_request', `file.path must be an absolute path under ${root} (got ${q(path)})`);
    const inside = (candidate: string, base: string): boolean => {
      const rel = relative(base, candidate);
      return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
    };
    // Symbolic links are followed: what counts is where the file really is.
    const real = await realpath(path).catch(() => resolve(path));
    const realRoot = await realpath(root).catch(() => root);
    if (!inside(resolve(path), root) || !inside(real, realRoot)) throw new GatewayError('invalid_request', `file.path must be under ${root} (sync.fileRoot)`);
  }

  async function syncSource(ctx: Context): Promise<Reply> {
    const source = required(ctx.get(SOURCE), 'source');
    if (source.kind === 'managed') throw registryError('not_synced', `source ${q(source.name)} is a managed source: it receives published entries and is not synced`);
    if (deps.sync == null) throw registryError('not_available', 'source syncs are not running on this server');
    // Answer with the outcome when the sync ends soon; a long one goes on (202 with its status).
    const done = await Promise.race([deps.sync.syncNow(source.name).then(() => true), new Promise<false>((resolve) => setTimeout(resolve, SYNC_WAIT_MS, false).unref())]);
    const record = await store.sources.get(source.name);
    if (record === null) throw new GatewayError('not_found', `source ${q(source.name)} not found`);
    return Reply.json(done ? 200 : 202, sourceView(record));
  }

  async function deleteSource(ctx: Context): Promise<Reply> {
    const source = required(ctx.get(SOURCE), 'source');
    if (source.origin === 'config') throw configManaged('source', source.name);
    // The registries that use it, named only when the caller may see them (the store's refusal names them all).
    const users = await store.sources.registriesUsing(source.name);
    if (users.length > 0) {
      const caller = callerOf(ctx);
      const records = await Promise.all(users.map((name) => store.registries.get(name)));
      const seen = users.filter((_, i) => records[i] !== null && canAccess(caller, records[i]!.claims));
      const others = users.length - seen.length;
      const named = [...seen.map(q), ...(others === 0 ? [] : [`${others} other registr${others === 1 ? 'y' : 'ies'}`])].join(' and ');
      throw registryError('source_in_use', `source ${q(source.name)} is used by ${named}: remove it from them first`, { extra: { registries: seen } });
    }
    if (!(await store.sources.delete(source.name))) throw new GatewayError('not_found', `source ${q(source.name)} not found`);
    await deps.sync?.refresh();
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
    endpoint('POST', '/v1/sources/:name/sync', requireManageSources, loadSource, syncSource),
  ];
}
