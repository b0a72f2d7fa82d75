/**
 * Writes the result of a sync: the entries of a synced source become exactly `items`, in one
 * transaction. Only differences are written: a version whose document did not change keeps its
 * publish and update times, so `updated_since` sees real changes only. Entries take the source's
 * claims (entries of synced sources inherit them).
 */
import type { ClaimMap } from '../../registry-authz/claims.ts';
import { resourceClaimPairs } from '../../registry-authz/claims.ts';
import type { Database } from './database.ts';
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

export interface SyncWriteResult {
  readonly inserted: number;
  readonly updated: number;
  readonly deleted: number;
}

const entryKey = (kind: string, name: string): string => `${kind}\u001f${name}`;
const versionKey = (entryId: number, version: string): string => `${entryId}\u001f${version}`;

/** Replaces the entries of `source`; false when the source no longer exists. */
export async function writeSourceEntries(db: Database, source: string, claims: ClaimMap, items: readonly SyncItem[]): Promise<SyncWriteResult | false> {
  return db.transaction(async (tx) => {
    const locked = await tx.query('SELECT name FROM sources WHERE name = $1 FOR UPDATE', [source]);
    if (locked.length === 0) return false;
    const claimsJson = JSON.stringify(claims);
    const pairs = resourceClaimPairs(claims);

    const existing = await tx.query<{ id: number; kind: EntryKind; name: string; version: string | null; digest: string | null }>(
      'SELECT e.id, e.kind, e.name, v.version, v.digest FROM entries e LEFT JOIN entry_versions v ON v.entry_id = e.id WHERE e.source = $1',
      [source],
    );
    const entryIds = new Map<string, number>();
    const digests = new Map<string, string>();
    for (const row of existing) {
      entryIds.set(entryKey(row.kind, row.name), row.id);
      if (row.version !== null) digests.set(versionKey(row.id, row.version), row.digest ?? '');
    }

    // Entries that are new.
    const wanted = new Map<string, { kind: EntryKind; name: string }>();
    for (const item of items) wanted.set(entryKey(item.kind, item.name), { kind: item.kind, name: item.name });
    const newEntries = [...wanted].filter(([key]) => !entryIds.has(key)).map(([, entry]) => entry);
    if (newEntries.length > 0) {
      const created = await tx.query<{ id: number; kind: EntryKind; name: string }>(
        `INSERT INTO entries (source, kind, name, claims, claim_pairs)
         SELECT $1, r.kind, r.name, $2::jsonb, $3::text[] FROM jsonb_to_recordset($4::jsonb) AS r (kind text, name text)
         RETURNING id, kind, name`,
        [source, claimsJson, pairs, JSON.stringify(newEntries)],
      );
      for (const row of created) entryIds.set(entryKey(row.kind, row.name), row.id);
    }

    // Versions: insert, update (document changed), delete (gone from the source).
    const inserts: object[] = [];
    const updates: object[] = [];
    const keep = new Set<string>();
    for (const item of items) {
      const entryId = entryIds.get(entryKey(item.kind, item.name))!;
      const key = versionKey(entryId, item.version);
      keep.add(key);
      const digest = digests.get(key);
      const row = { entry_id: entryId, version: item.version, version_key: versionSortKey(item.version), document: item.document, digest: item.digest };
      if (digest === undefined) inserts.push(row);
      else if (digest !== item.digest) updates.push(row);
    }
    const deletes = existing.filter((row) => row.version !== null && !keep.has(versionKey(row.id, row.version))).map((row) => ({ entry_id: row.id, version: row.version }));

    if (deletes.length > 0) {
      await tx.query('DELETE FROM entry_versions v USING jsonb_to_recordset($1::jsonb) AS r (entry_id int, version text) WHERE v.entry_id = r.entry_id AND v.version = r.version', [JSON.stringify(deletes)]);
    }
    if (updates.length > 0) {
      await tx.query(
        `UPDATE entry_versions v SET document = r.document, digest = r.digest, updated_at = now()
         FROM json_to_recordset($1::json) AS r (entry_id int, version text, document json, digest text)
         WHERE v.entry_id = r.entry_id AND v.version = r.version`,
        [JSON.stringify(updates)],
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
    await tx.query('DELETE FROM entries e WHERE e.source = $1 AND NOT EXISTS (SELECT 1 FROM entry_versions v WHERE v.entry_id = e.id)', [source]);
    await tx.query('UPDATE entries SET claims = $2::jsonb, claim_pairs = $3::text[] WHERE source = $1 AND claim_pairs IS DISTINCT FROM $3::text[]', [source, claimsJson, pairs]);
    if (inserts.length + updates.length + deletes.length > 0) await refreshLatest(tx, { source });
    return { inserted: inserts.length, updated: updates.length, deleted: deletes.length };
  });
}
