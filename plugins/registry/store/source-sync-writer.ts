/**
 * Writes the result of a sync in one transaction: a snapshot (`writeSourceEntries`: the entries
 * of a synced source become exactly `items`) or changes (`applySourceChanges`: `items` are added
 * or replaced, `removed` are deleted).
 *
 * Only differences are written: a version whose document did not change keeps its publish and
 * update times, so `updated_since` sees real changes only. A version that leaves the source
 * becomes a tombstone (entry-sql.ts), so that mirrors following `updated_since` learn of it; a
 * version that comes back is revived (its document as it comes, updated now, its first publish
 * time kept).
 *
 * An entry takes the claims of its items: an item's own `claims` (cluster resources), else the
 * source's; when several items of one entry carry different claims, the first item's win (all
 * versions of an entry share one set). An entry not among `items` keeps its claims.
 */
import type { ClaimMap } from '../../registry-authz/claims.ts';
import { resourceClaimPairs } from '../../registry-authz/claims.ts';
import type { Database, SqlRunner } from './database.ts';
import { refreshLatest } from './entry-sql.ts';
import type { EntryKind } from './records.ts';
import { versionSortKey } from './version-order.ts';

export interface SyncItem {
  readonly kind: EntryKind;
  readonly name: string;
  readonly version: string;
  readonly document: Readonly<Record<string, unknown>>;
  /** Digest of `document` (see `documentDigest`). */
  readonly digest: string;
  /**
   * The entry's own claims (cluster-resource sources: the resource's `authz-claims`
   * annotation). Absent: the entry inherits the source's claims.
   */
  readonly claims?: ClaimMap;
}

/** A version a `changes` sync removes. */
export interface RemovedVersion {
  readonly kind: EntryKind;
  readonly name: string;
  readonly version: string;
}

export interface SyncWriteResult {
  /** Versions that appeared: new ones, and tombstones revived. */
  readonly inserted: number;
  /** Live versions whose document changed. */
  readonly updated: number;
  /** Live versions that became tombstones. */
  readonly deleted: number;
}

interface ExistingVersion {
  readonly id: number;
  readonly kind: EntryKind;
  readonly name: string;
  readonly claim_pairs: string[];
  readonly version: string | null;
  readonly digest: string | null;
  readonly deleted: boolean | null;
}

const entryKey = (kind: string, name: string): string => `${kind}\u001f${name}`;
const versionKey = (entryId: number, version: string): string => `${entryId}\u001f${version}`;

/** Replaces the entries of `source` with `items`; false when the source no longer exists. */
export async function writeSourceEntries(db: Database, source: string, claims: ClaimMap, items: readonly SyncItem[]): Promise<SyncWriteResult | false> {
  return db.transaction(async (tx) => {
    if (!(await lockSource(tx, source))) return false;
    const existing = await tx.query<ExistingVersion>(
      `SELECT e.id, e.kind, e.name, e.claim_pairs, v.version, v.digest, v.deleted_at IS NOT NULL AS deleted
       FROM entries e LEFT JOIN entry_versions v ON v.entry_id = e.id WHERE e.source = $1`,
      [source],
    );
    const written = await upsertItems(tx, source, claims, unique(items), existing);
    const keep = new Set(written.keys);
    const gone = existing.filter((row) => row.version !== null && row.deleted === false && !keep.has(versionKey(row.id, row.version)));
    const deleted = await tombstone(tx, gone);
    const result = { inserted: written.inserted, updated: written.updated, deleted };
    if (result.inserted + result.updated + result.deleted > 0) await refreshLatest(tx, { source });
    return result;
  });
}

/**
 * Applies the changes of an incremental sync to `source`: `items` are added, replaced or revived,
 * `removed` become tombstones (a version both removed and among `items` stays). Only the entries
 * named are read and written. False when the source no longer exists.
 */
export async function applySourceChanges(
  db: Database,
  source: string,
  claims: ClaimMap,
  items: readonly SyncItem[],
  removed: readonly RemovedVersion[],
): Promise<SyncWriteResult | false> {
  return db.transaction(async (tx) => {
    if (!(await lockSource(tx, source))) return false;
    const named = new Map<string, { kind: EntryKind; name: string }>();
    for (const entry of [...items, ...removed]) named.set(entryKey(entry.kind, entry.name), { kind: entry.kind, name: entry.name });
    if (named.size === 0) return { inserted: 0, updated: 0, deleted: 0 };
    const existing = await tx.query<ExistingVersion>(
      `SELECT e.id, e.kind, e.name, e.claim_pairs, v.version, v.digest, v.deleted_at IS NOT NULL AS deleted
       FROM jsonb_to_recordset($2::jsonb) AS r (kind text, name text)
       JOIN entries e ON e.source = $1 AND e.kind = r.kind AND e.name = r.name
       LEFT JOIN entry_versions v ON v.entry_id = e.id`,
      [source, JSON.stringify([...named.values()])],
    );
    const written = await upsertItems(tx, source, claims, unique(items), existing);
    const entryIds = new Map(existing.map((row) => [entryKey(row.kind, row.name), row.id]));
    const keep = new Set(written.keys);
    const removedKeys = new Set<string>();
    for (const r of removed) {
      const id = entryIds.get(entryKey(r.kind, r.name));
      if (id !== undefined && !keep.has(versionKey(id, r.version))) removedKeys.add(versionKey(id, r.version));
    }
    const gone = existing.filter((row) => row.version !== null && row.deleted === false && removedKeys.has(versionKey(row.id, row.version)));
    const deleted = await tombstone(tx, gone);
    const result = { inserted: written.inserted, updated: written.updated, deleted };
    if (result.inserted + result.updated + result.deleted > 0) {
      await refreshLatest(tx, { entryIds: [...new Set([...written.entryIds, ...gone.map((row) => row.id)])] });
    }
    return result;
  });
}

/** Locks the source's row for the transaction; false when it does not exist. */
async function lockSource(tx: SqlRunner, source: string): Promise<boolean> {
  const locked = await tx.query('SELECT name FROM sources WHERE name = $1 FOR UPDATE', [source]);
  return locked.length > 0;
}

/** Items without repeats of one version (the first is kept: inserting both would fail the sync). */
function unique(items: readonly SyncItem[]): SyncItem[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = `${item.kind}\u001f${item.name}\u001f${item.version}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Writes `items` against the `existing` versions of their entries: creates the entries that are
 * new, sets each entry's claims, inserts new versions, replaces changed documents, revives
 * tombstones. Returns the counts, the version keys written and the entries touched.
 */
async function upsertItems(
  tx: SqlRunner,
  source: string,
  sourceClaims: ClaimMap,
  items: readonly SyncItem[],
  existing: readonly ExistingVersion[],
): Promise<{ inserted: number; updated: number; keys: string[]; entryIds: number[] }> {
  const entryIds = new Map<string, number>();
  const entryPairs = new Map<number, string[]>();
  const versions = new Map<string, { digest: string; deleted: boolean }>();
  for (const row of existing) {
    entryIds.set(entryKey(row.kind, row.name), row.id);
    entryPairs.set(row.id, row.claim_pairs);
    if (row.version !== null) versions.set(versionKey(row.id, row.version), { digest: row.digest ?? '', deleted: row.deleted === true });
  }

  // The claims of each entry named by the items: its first item's.
  const wanted = new Map<string, { kind: EntryKind; name: string; claims: ClaimMap }>();
  for (const item of items) {
    const key = entryKey(item.kind, item.name);
    if (!wanted.has(key)) wanted.set(key, { kind: item.kind, name: item.name, claims: item.claims ?? sourceClaims });
  }
  const fresh = [...wanted].filter(([key]) => !entryIds.has(key)).map(([, e]) => ({ kind: e.kind, name: e.name, claims: e.claims, claim_pairs: resourceClaimPairs(e.claims) }));
  if (fresh.length > 0) {
    const created = await tx.query<{ id: number; kind: EntryKind; name: string }>(
      `INSERT INTO entries (source, kind, name, claims, claim_pairs)
       SELECT $1, r.kind, r.name, r.claims, ARRAY(SELECT jsonb_array_elements_text(r.claim_pairs))
       FROM jsonb_to_recordset($2::jsonb) AS r (kind text, name text, claims jsonb, claim_pairs jsonb)
       RETURNING id, kind, name`,
      [source, JSON.stringify(fresh)],
    );
    for (const row of created) entryIds.set(entryKey(row.kind, row.name), row.id);
  }
  const reclaimed: object[] = [];
  for (const [key, entry] of wanted) {
    const id = entryIds.get(key)!;
    const pairs = resourceClaimPairs(entry.claims);
    const current = entryPairs.get(id);
    if (current !== undefined && JSON.stringify(current) !== JSON.stringify(pairs)) reclaimed.push({ id, claims: entry.claims, claim_pairs: pairs });
  }
  if (reclaimed.length > 0) {
    await tx.query(
      `UPDATE entries e SET claims = r.claims, claim_pairs = ARRAY(SELECT jsonb_array_elements_text(r.claim_pairs))
       FROM jsonb_to_recordset($1::jsonb) AS r (id int, claims jsonb, claim_pairs jsonb) WHERE e.id = r.id`,
      [JSON.stringify(reclaimed)],
    );
  }

  const inserts: object[] = [];
  const updates: object[] = [];
  const revivals: object[] = [];
  const keys: string[] = [];
  const touched = new Set<number>();
  for (const item of items) {
    const entryId = entryIds.get(entryKey(item.kind, item.name))!;
    const key = versionKey(entryId, item.version);
    keys.push(key);
    const current = versions.get(key);
    const row = { entry_id: entryId, version: item.version, version_key: versionSortKey(item.version), document: item.document, digest: item.digest };
    if (current === undefined) inserts.push(row);
    else if (current.deleted) revivals.push(row);
    else if (current.digest !== item.digest) updates.push(row);
    else continue;
    touched.add(entryId);
  }
  const changed = [...updates, ...revivals];
  if (changed.length > 0) {
    await tx.query(
      `UPDATE entry_versions v SET document = r.document, digest = r.digest, deleted_at = NULL, updated_at = now()
       FROM json_to_recordset($1::json) AS r (entry_id int, version text, document json, digest text)
       WHERE v.entry_id = r.entry_id AND v.version = r.version`,
      [JSON.stringify(changed)],
    );
  }
  if (inserts.length > 0) {
    await tx.query(
      `INSERT INTO entry_versions (entry_id, version, version_key, document, digest)
       SELECT r.entry_id, r.version, r.version_key, r.document, r.digest
       FROM json_to_recordset($1::json) AS r (entry_id int, version text, version_key text, document json, digest text)`,
      [JSON.stringify(inserts)],
    );
  }
  return { inserted: inserts.length + revivals.length, updated: updates.length, keys, entryIds: [...touched] };
}

/** Turns live versions into tombstones (deleted and updated now, no longer latest); returns how many. */
async function tombstone(tx: SqlRunner, rows: readonly ExistingVersion[]): Promise<number> {
  if (rows.length === 0) return 0;
  await tx.query(
    `UPDATE entry_versions v SET deleted_at = now(), updated_at = now(), is_latest = false
     FROM jsonb_to_recordset($1::jsonb) AS r (entry_id int, version text)
     WHERE v.entry_id = r.entry_id AND v.version = r.version AND v.deleted_at IS NULL`,
    [JSON.stringify(rows.map((row) => ({ entry_id: row.id, version: row.version })))],
  );
  return rows.length;
}
