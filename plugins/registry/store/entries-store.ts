/**
 * Entry versions: reading one entry, publishing a version, deleting one.
 *
 * Publishing is one transaction under a lock on the entry's name (within its source): the claims
 * rule is checked against the versions committed before, and the version is inserted, or
 * nothing is. Two concurrent publishes of one version give one success and one 409; no reader
 * ever sees an entry without its version.
 *
 * Deleting a version leaves a tombstone (entry-sql.ts): hidden by default, listed with
 * `include_deleted` and by `updated_since`, never `latest`. Versions are immutable, deleted ones
 * included: publishing a version whose tombstone exists is refused (409 `version_exists`, saying
 * it was deleted). The entry, and so its claims, stays with its tombstones.
 */
import { createHash } from 'node:crypto';
import { GatewayError } from '@gatehouse-mcp/gateway';
import type { ClaimMap } from '../../registry-authz/claims.ts';
import { resourceClaimPairs } from '../../registry-authz/claims.ts';
import { Params } from './cursor.ts';
import { UNIQUE_VIOLATION, sqlState, type Database } from './database.ts';
import { LIVE, VERSION_COLUMNS, refreshLatest, servedByRegistry, toVersionRecord, visibleTo, type VersionRow } from './entry-sql.ts';
import type { PlannerStatistics } from './planner-statistics.ts';
import type { EntryFilter, EntryKind, VersionRecord } from './records.ts';
import { versionSortKey } from './version-order.ts';
import { registryError } from '../errors.ts';

export interface PublishInput {
  /** The managed source the version is written to (the one of the registry published to). */
  readonly source: string;
  readonly kind: EntryKind;
  readonly name: string;
  readonly version: string;
  readonly document: Readonly<Record<string, unknown>>;
  readonly claims: ClaimMap;
}

/** Decides whether a version with the requested claims may join an entry whose versions carry `existing` (null: a new entry). */
export type ClaimsCheck = (existing: ClaimMap | null) => GatewayError | null;

export function documentDigest(document: unknown): string {
  return createHash('sha256').update(JSON.stringify(document)).digest('base64url');
}

const q = (text: string): string => JSON.stringify(text);

export class EntriesStore {
  readonly #db: Database;
  readonly #statistics: PlannerStatistics;

  constructor(db: Database, statistics: PlannerStatistics) {
    this.#db = db;
    this.#statistics = statistics;
  }

  /**
   * The versions of `name` that `registry` serves to a caller with `filter`, newest publication
   * first (tombstones only with `includeDeleted`).
   */
  async versionsOf(registry: string, kind: EntryKind, name: string, filter: EntryFilter, includeDeleted = false): Promise<VersionRecord[]> {
    const p = new Params();
    const rows = await this.#db.query<VersionRow>(
      `SELECT ${VERSION_COLUMNS} ${servedByRegistry(p, registry, kind)} AND e.name = ${p.add(name)}${visibleTo(p, filter)}${includeDeleted ? '' : ` AND ${LIVE}`}
       ORDER BY v.published_at DESC, v.version_key DESC, v.version DESC`,
      p.values,
    );
    return rows.map(toVersionRecord);
  }

  /**
   * One version (`latest` for the latest, never a tombstone) of `name` as `registry` serves it to
   * the caller, or null; a tombstone only with `includeDeleted`.
   */
  async getVersion(registry: string, kind: EntryKind, name: string, version: string, filter: EntryFilter, includeDeleted = false): Promise<VersionRecord | null> {
    const p = new Params();
    const which = version === 'latest' ? 'v.is_latest' : `v.version = ${p.add(version)}${includeDeleted ? '' : ` AND ${LIVE}`}`;
    const rows = await this.#db.query<VersionRow>(
      `SELECT ${VERSION_COLUMNS} ${servedByRegistry(p, registry, kind)} AND e.name = ${p.add(name)} AND ${which}${visibleTo(p, filter)}`,
      p.values,
    );
    return rows[0] === undefined ? null : toVersionRecord(rows[0]);
  }

  async publish(input: PublishInput, check: ClaimsCheck): Promise<VersionRecord> {
    try {
      const published = await this.#db.transaction(async (tx) => {
        const { source, kind, name, version } = input;
        await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`gatehouse.entry\u001f${source}\u001f${kind}\u001f${name}`]);
        // A name another source already provides, in ANY registry that also serves this managed
        // source (not only the one published to), would shadow it there, or be shadowed. The
        // refusal names neither that source nor its registry: the caller may not see them.
        const collides = await tx.query<{ one: number }>(
          `SELECT 1 AS one FROM registry_sources mine
             JOIN registry_sources other ON other.registry = mine.registry AND other.source <> mine.source
             JOIN entries e ON e.source = other.source AND e.kind = $2 AND e.name = $3
           WHERE mine.source = $1 LIMIT 1`,
          [source, kind, name],
        );
        if (collides[0] !== undefined) {
          throw registryError('name_conflict', `${kind} ${q(name)} is already provided by another source of a registry that serves this one: publish it under another name`);
        }
        const existing = await tx.query<{ id: number; claims: ClaimMap }>('SELECT id, claims FROM entries WHERE source = $1 AND kind = $2 AND name = $3', [source, kind, name]);
        const problem = check(existing[0]?.claims ?? null);
        if (problem !== null) throw problem;
        let entryId = existing[0]?.id;
        if (entryId !== undefined) {
          const same = await tx.query<{ deleted_at: Date | null }>('SELECT deleted_at FROM entry_versions WHERE entry_id = $1 AND version = $2', [entryId, version]);
          if (same[0] !== undefined) throw duplicate(input, same[0].deleted_at);
        }
        if (entryId === undefined) {
          const created = await tx.query<{ id: number }>(
            'INSERT INTO entries (source, kind, name, claims, claim_pairs) VALUES ($1, $2, $3, $4::jsonb, $5::text[]) RETURNING id',
            [source, kind, name, JSON.stringify(input.claims), resourceClaimPairs(input.claims)],
          );
          entryId = created[0]!.id;
        }
        await tx.query(
          'INSERT INTO entry_versions (entry_id, version, version_key, document, digest) VALUES ($1, $2, $3, $4::json, $5)',
          [entryId, version, versionSortKey(version), JSON.stringify(input.document), documentDigest(input.document)],
        );
        await refreshLatest(tx, { entryId });
        const rows = await tx.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM entries e JOIN entry_versions v ON v.entry_id = e.id WHERE e.id = $1 AND v.version = $2`, [entryId, version]);
        return toVersionRecord(rows[0]!);
      });
      this.#statistics.noteChanges(1);
      return published;
    } catch (err) {
      if (sqlState(err) === UNIQUE_VIOLATION) throw duplicate(input);
      throw err;
    }
  }

  /**
   * Deletes one live version of an entry of `source` that the caller can see: it becomes a
   * tombstone (updated now), and "latest" moves to the highest live version. Returns the
   * tombstone, or null when there is no such live version (or the caller may not see it).
   */
  async deleteVersion(source: string, kind: EntryKind, name: string, version: string, filter: EntryFilter): Promise<VersionRecord | null> {
    const deleted = await this.#db.transaction(async (tx) => {
      const p = new Params();
      const rows = await tx.query<{ id: number }>(
        `SELECT e.id FROM entries e JOIN entry_versions v ON v.entry_id = e.id
         WHERE e.source = ${p.add(source)} AND e.kind = ${p.add(kind)} AND e.name = ${p.add(name)} AND v.version = ${p.add(version)} AND ${LIVE}${visibleTo(p, filter)}
         FOR UPDATE OF e`,
        p.values,
      );
      const row = rows[0];
      if (row === undefined) return null;
      await tx.query('UPDATE entry_versions SET deleted_at = now(), updated_at = now(), is_latest = false WHERE entry_id = $1 AND version = $2', [row.id, version]);
      await refreshLatest(tx, { entryId: row.id });
      const tombstone = await tx.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM entries e JOIN entry_versions v ON v.entry_id = e.id WHERE e.id = $1 AND v.version = $2`, [row.id, version]);
      return toVersionRecord(tombstone[0]!);
    });
    if (deleted !== null) this.#statistics.noteChanges(1);
    return deleted;
  }
}

function duplicate(input: PublishInput, deletedAt: Date | null = null): GatewayError {
  if (deletedAt !== null) {
    return registryError(
      'version_exists',
      `version ${q(input.version)} of ${input.kind} ${q(input.name)} was published and deleted (${deletedAt.toISOString()}): versions are immutable, deleted ones included, publish a new version`,
    );
  }
  return registryError('version_exists', `version ${q(input.version)} of ${input.kind} ${q(input.name)} is already published: versions are immutable, publish a new version`);
}
