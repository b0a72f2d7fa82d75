/**
 * Response bodies. Consumer and publish paths use the official MCP registry v0.1 shapes:
 * `{"server": <server.json>, "_meta": {...}}` per version (`status` is `deleted` for a tombstone,
 * whose `updatedAt` is its deletion time) and
 * `{"servers": [...], "metadata": {"nextCursor", "count"}}` per list (skills alike, under
 * `skill` / `skills`). The admin API shows sources and registries in the shape of the config
 * file, plus read-only fields (origin, times, sync status).
 */
import { formatDuration } from '../config/registry-config.ts';
import type { EntryRecord, Page, RegistryRecord, ServedVersion, SourceRecord } from '../store/records.ts';

const OFFICIAL_META = 'io.modelcontextprotocol.registry/official';

export function versionResponse(version: ServedVersion): object {
  return {
    [version.kind]: version.document,
    _meta: {
      [OFFICIAL_META]: {
        status: version.deletedAt === null ? 'active' : 'deleted',
        publishedAt: version.publishedAt.toISOString(),
        updatedAt: version.updatedAt.toISOString(),
        isLatest: version.isLatest,
      },
    },
  };
}

function metadata(count: number, nextCursor: string | null): object {
  return nextCursor === null ? { count } : { nextCursor, count };
}

export function versionList(field: 'servers' | 'skills', versions: readonly ServedVersion[], nextCursor: string | null = null): object {
  return { [field]: versions.map(versionResponse), metadata: metadata(versions.length, nextCursor) };
}

export function entryList(page: Page<EntryRecord>, withSource: boolean): object {
  const entries = page.items.map((entry) => ({
    type: entry.kind,
    name: entry.name,
    ...(withSource ? { source: entry.source } : {}),
    claims: entry.claims,
    versions: entry.versions.map((v) => ({
      version: v.version,
      isLatest: v.isLatest,
      publishedAt: v.publishedAt.toISOString(),
      updatedAt: v.updatedAt.toISOString(),
      [entry.kind]: v.document,
    })),
  }));
  return { entries, metadata: metadata(entries.length, page.nextCursor) };
}

/** Invalid items named in a source's status (the rest are counted). */
const SKIPPED_SHOWN = 20;

export function sourceView(source: SourceRecord): object {
  const view: Record<string, unknown> = { name: source.name };
  if (source.format !== null) view.format = source.format;
  if (source.kind === 'managed') view.managed = {};
  if (source.file !== null) view.file = { path: source.file.path };
  if (source.git !== null) {
    const { repository, branch, path, auth } = source.git;
    view.git = { repository, ...(branch === null ? {} : { branch }), path, ...(auth === null ? {} : { auth: { ...(auth.username === null ? {} : { username: auth.username }), passwordSecretRef: auth.passwordSecretRef } }) };
  }
  if (source.api !== null) view.api = source.api.tokenSecretRef === null ? { url: source.api.url } : source.api;
  if (source.cluster !== null) view.cluster = source.cluster;
  if (source.syncIntervalMs !== null) view.syncPolicy = { interval: formatDuration(source.syncIntervalMs) };
  view.claims = source.claims;
  view.origin = source.origin;
  view.createdAt = source.createdAt.toISOString();
  view.updatedAt = source.updatedAt.toISOString();
  if (source.kind !== 'managed') {
    const sync = source.sync;
    view.status =
      sync === null
        ? { phase: 'pending', message: 'not synced yet', attempts: 0 }
        : {
            phase: sync.phase,
            message: sync.message,
            lastAttemptAt: sync.lastAttemptAt,
            lastSuccessAt: sync.lastSuccessAt,
            nextAttemptAt: sync.nextAttemptAt,
            attempts: sync.attempts,
            failedAttempts: sync.failedAttempts,
            servers: sync.servers,
            skills: sync.skills,
            ...(sync.revision === null ? {} : { revision: sync.revision }),
            skippedCount: sync.skipped.length,
            skipped: sync.skipped.slice(0, SKIPPED_SHOWN),
          };
  }
  return view;
}

export function registryView(registry: RegistryRecord): object {
  return {
    name: registry.name,
    sources: registry.sources,
    claims: registry.claims,
    origin: registry.origin,
    createdAt: registry.createdAt.toISOString(),
    updatedAt: registry.updatedAt.toISOString(),
  };
}

/** Fields of a source or registry view that a PUT body may carry back unchanged (ignored). */
export const READ_ONLY_FIELDS = ['origin', 'createdAt', 'updatedAt', 'status'] as const;
