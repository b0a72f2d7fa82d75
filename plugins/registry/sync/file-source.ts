/**
 * One sync of a file source: read the file, parse it, write the differences. A file that cannot
 * be read or parsed leaves the source's entries as they were (the last good data) and records
 * why in the source's status. An unchanged file (same digest as the last good sync) is not
 * written again.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { SourceDefinition } from '../config/registry-config.ts';
import type { SyncStatus } from '../store/records.ts';
import { writeSourceEntries } from '../store/source-sync-writer.ts';
import type { Store } from '../store/store.ts';
import { contentDigest, parseUpstreamFile } from './upstream-file.ts';

export async function syncFileSource(store: Store, source: SourceDefinition, log: Logger): Promise<SyncStatus> {
  const path = source.file!.path;
  const previous = (await store.sources.get(source.name))?.sync ?? null;
  const now = new Date().toISOString();
  const failed = async (message: string): Promise<SyncStatus> => {
    const status: SyncStatus = {
      state: 'failed',
      lastAttemptAt: now,
      lastSuccessAt: previous?.lastSuccessAt ?? null,
      message,
      servers: previous?.servers ?? 0,
      skills: previous?.skills ?? 0,
      digest: previous?.digest ?? null,
    };
    await store.sources.setSyncStatus(source.name, status);
    log.warn({ source: source.name, path, reason: message }, 'sync failed: the source keeps its last good data');
    return status;
  };

  let content: string;
  try {
    content = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return failed(code === 'ENOENT' ? `file ${path} does not exist` : `file ${path} cannot be read: ${(err as Error).message}`);
  }
  const digest = contentDigest(content);
  if (previous?.state === 'ok' && previous.digest === digest) {
    const status: SyncStatus = { ...previous, lastAttemptAt: now, lastSuccessAt: now };
    await store.sources.setSyncStatus(source.name, status);
    return status;
  }
  const parsed = parseUpstreamFile(content);
  if (!parsed.ok) return failed(`${path}: ${parsed.message}`);
  const written = await writeSourceEntries(store.db, source.name, source.claims, parsed.items);
  if (written === false) return failed(`source ${source.name} no longer exists`);
  store.statistics.noteChanges(written.inserted + written.updated + written.deleted);
  const status: SyncStatus = { state: 'ok', lastAttemptAt: now, lastSuccessAt: now, message: null, servers: parsed.servers, skills: parsed.skills, digest };
  await store.sources.setSyncStatus(source.name, status);
  log.info({ source: source.name, servers: parsed.servers, skills: parsed.skills, ...written }, 'source synced');
  return status;
}
