/**
 * Applies what a reader returned to the store: a snapshot replaces the source's entries, changes
 * are merged, unchanged content writes nothing. Entries take the source's claims unless an item
 * carries its own (cluster resources).
 */
import type { SourceRecord } from '../store/records.ts';
import { applySourceChanges, writeSourceEntries, type SyncWriteResult } from '../store/source-sync-writer.ts';
import type { Store } from '../store/store.ts';
import type { ReadOutcome } from './source-reader.ts';
import { SyncFailure } from './source-reader.ts';

export interface Applied {
  /** Whether anything was written (false for unchanged content). */
  readonly written: boolean;
  readonly changes?: SyncWriteResult;
  /** What the status keeps; undefined: unchanged from the last good sync. */
  readonly servers?: number;
  readonly skills?: number;
  readonly skipped?: readonly string[];
  readonly digest?: string | null;
  readonly revision?: string | null;
}

/** How a status names skipped items, at most: lines, and characters a line (a source's text may be anything). */
const MAX_SKIPPED_LINES = 101;
const MAX_SKIPPED_LINE = 400;

/** The skipped items as the status keeps them: bounded in number and length, whatever a reader returned. */
export function boundedSkipped(skipped: readonly string[]): string[] {
  const lines = skipped.slice(0, MAX_SKIPPED_LINES).map((line) => (line.length > MAX_SKIPPED_LINE ? `${line.slice(0, MAX_SKIPPED_LINE)}…` : line));
  if (skipped.length > MAX_SKIPPED_LINES) lines[MAX_SKIPPED_LINES - 1] = `… and more items skipped (${skipped.length - MAX_SKIPPED_LINES + 1} not named)`;
  return lines;
}

export async function applyReadOutcome(store: Store, source: SourceRecord, outcome: ReadOutcome): Promise<Applied> {
  if (outcome.type === 'unchanged') return { written: false, ...(outcome.revision == null ? {} : { revision: outcome.revision }) };
  if (outcome.type === 'changes') {
    const changes = await applySourceChanges(store.db, source.name, source.claims, outcome.items, outcome.removed);
    if (changes === false) throw new SyncFailure(`source ${source.name} no longer exists`);
    store.statistics.noteChanges(changes.inserted + changes.updated + changes.deleted);
    // What the source now holds is the last good data plus these changes: count it.
    const counts = await store.sources.liveVersions(source.name);
    return { written: true, changes, ...counts, skipped: boundedSkipped(outcome.skipped), revision: outcome.revision };
  }
  const changes = await writeSourceEntries(store.db, source.name, source.claims, outcome.items);
  if (changes === false) throw new SyncFailure(`source ${source.name} no longer exists`);
  store.statistics.noteChanges(changes.inserted + changes.updated + changes.deleted);
  let servers = 0;
  for (const item of outcome.items) if (item.kind === 'server') servers++;
  return {
    written: true,
    changes,
    servers,
    skills: outcome.items.length - servers,
    skipped: boundedSkipped(outcome.skipped),
    digest: outcome.digest,
    revision: outcome.revision ?? null,
  };
}
