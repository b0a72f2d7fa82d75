/**
 * Reloading a running registry server from its file (`gatehouse registry serve`: SIGHUP, or
 * `--watch-config`). What the file defines of the catalogue is applied as at start: its sources
 * and registries (added, changed, removed: store/apply-config.ts) and the Secret documents the
 * sources read with; the sync scheduler picks the changes up at once. The rest was built once
 * and needs a restart: a reload that changes any of it is refused as a whole, nothing applied,
 * each part named — the database, the listener (`server`), the sync settings, `auth` (the
 * bearer validation and the role rules are plugins of the running chain), and `audit`.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { RestartNeeded } from '@gatehouse-mcp/gateway';
import type { RegistryConfig } from './config/registry-config.ts';
import { applyConfig } from './store/apply-config.ts';
import type { Store } from './store/store.ts';
import type { SyncScheduler } from './sync/scheduler.ts';
import type { ReaderContext } from './sync/source-readers.ts';

export type RegistryReloadOutcome =
  | { readonly status: 'applied'; readonly sources: Changed; readonly registries: Changed; readonly secrets: boolean; readonly warnings: readonly string[] }
  | { readonly status: 'unchanged' }
  | { readonly status: 'restart-needed'; readonly parts: readonly RestartNeeded[] }
  | { readonly status: 'failed'; readonly error: unknown };

interface Changed {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
}

/** Every part of `next` that differs from `current` and needs a restart. */
export function registryRestartNeeded(current: RegistryConfig, next: RegistryConfig): RestartNeeded[] {
  const found: RestartNeeded[] = [];
  const where = (part: string): string => `${next.file} ${part}`;
  if (!isDeepStrictEqual(current.database, next.database)) found.push({ path: where('database'), reason: 'the database is opened once' });
  if (!isDeepStrictEqual(current.server, next.server)) found.push({ path: where('server'), reason: 'the listener settings changed' });
  if (!isDeepStrictEqual(current.sync, next.sync)) found.push({ path: where('sync'), reason: 'the sync settings are the scheduler\'s, made once' });
  if (!isDeepStrictEqual(current.auth, next.auth)) found.push({ path: where('auth'), reason: 'token validation and role rules are built once' });
  if (!isDeepStrictEqual(current.audit, next.audit)) found.push({ path: where('audit'), reason: 'the audit trail and its output are started once, with the server' });
  return found;
}

function changedByName<T extends { readonly name: string }>(before: readonly T[], after: readonly T[]): Changed {
  const old = new Map(before.map((item) => [item.name, item]));
  const now = new Map(after.map((item) => [item.name, item]));
  return {
    added: [...now.keys()].filter((name) => !old.has(name)),
    removed: [...old.keys()].filter((name) => !now.has(name)),
    changed: [...now.keys()].filter((name) => old.has(name) && !isDeepStrictEqual(old.get(name), now.get(name))),
  };
}

const count = (c: Changed): number => c.added.length + c.removed.length + c.changed.length;

/** What a running registry needs to reload: the parts it was built from. */
export interface ReloadTarget {
  readonly store: Store;
  readonly sync: SyncScheduler;
  /** The scheduler's readers resolve secrets through this (replaced by a reload). */
  readonly readerContext: { secrets: ReaderContext['secrets'] };
  readonly log: Logger;
}

/**
 * Applies `next` to the registry serving `current`; resolves with the outcome (logged), never
 * rejects. Reloads are serialised by the caller (plugins/cli/reload.ts).
 */
export async function reloadRegistry(target: ReloadTarget, current: RegistryConfig, next: RegistryConfig): Promise<RegistryReloadOutcome> {
  const { log } = target;
  const parts = registryRestartNeeded(current, next);
  if (parts.length > 0) {
    for (const part of parts) log.error({ path: part.path, reason: part.reason }, `reload refused: ${part.path} needs a restart (${part.reason})`);
    log.error({ file: next.file, needsRestart: parts.map((p) => p.path) }, 'reload refused: nothing was applied, the running configuration keeps serving');
    return { status: 'restart-needed', parts };
  }
  const sources = changedByName(current.sources, next.sources);
  const registries = changedByName(current.registries, next.registries);
  const secrets = !current.secrets.sameAs(next.secrets);
  if (count(sources) + count(registries) === 0 && !secrets) {
    log.info({ file: next.file }, 'reload: the configuration is unchanged, nothing to apply');
    return { status: 'unchanged' };
  }
  let warnings: string[];
  try {
    warnings = await applyConfig(target.store, next.sources, next.registries);
  } catch (err) {
    log.error({ err, file: next.file }, 'reload refused: the sources and registries could not be written to the database; the running configuration keeps serving');
    return { status: 'failed', error: err };
  }
  for (const warning of warnings) log.warn(warning);
  target.readerContext.secrets = next.secrets;
  await target.sync.refresh();
  if (secrets) await target.sync.renewReaders();
  log.info(
    { file: next.file, sources, registries, secrets },
    `reload applied: sources +${sources.added.length} -${sources.removed.length} ~${sources.changed.length}, registries +${registries.added.length} -${registries.removed.length} ~${registries.changed.length}${secrets ? ', secrets changed' : ''}`,
  );
  return { status: 'applied', sources, registries, secrets, warnings };
}
