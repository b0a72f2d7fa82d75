/**
 * Sources: definitions, origin, and the status of their syncs.
 */
import type { ClaimMap } from '../../registry-authz/claims.ts';
import type { SourceDefinition } from '../config/registry-config.ts';
import { resourceClaimPairs } from '../../registry-authz/claims.ts';
import type { Database, SqlRunner } from './database.ts';
import type { Origin, SourceRecord, SyncStatus } from './records.ts';
import { registryError } from '../errors.ts';

interface SourceRow {
  name: string;
  kind: SourceDefinition['kind'];
  format: 'upstream' | null;
  file_path: string | null;
  git: SourceDefinition['git'];
  /** The block of an api or cluster source. */
  settings: { api?: SourceDefinition['api']; cluster?: SourceDefinition['cluster'] } | null;
  sync_interval_ms: number | null;
  claims: ClaimMap;
  origin: Origin;
  sync_status: (Partial<SyncStatus> & { state?: SyncStatus['phase'] }) | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'name, kind, format, file_path, git, settings, sync_interval_ms, claims, origin, sync_status, created_at, updated_at';

function toRecord(row: SourceRow): SourceRecord {
  return {
    name: row.name,
    kind: row.kind,
    format: row.format,
    file: row.file_path === null ? null : { path: row.file_path },
    git: row.git === null ? null : { ...row.git, auth: row.git.auth ?? null },
    api: row.settings?.api ?? null,
    cluster: row.settings?.cluster ?? null,
    syncIntervalMs: row.sync_interval_ms,
    claims: row.claims,
    origin: row.origin,
    sync: syncStatusOf(row.sync_status),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export class SourcesStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async list(): Promise<SourceRecord[]> {
    const rows = await this.#db.query<SourceRow>(`SELECT ${COLUMNS} FROM sources ORDER BY name`);
    return rows.map(toRecord);
  }

  async get(name: string, sql: SqlRunner = this.#db): Promise<SourceRecord | null> {
    const rows = await sql.query<SourceRow>(`SELECT ${COLUMNS} FROM sources WHERE name = $1`, [name]);
    return rows[0] === undefined ? null : toRecord(rows[0]);
  }

  /** Creates or replaces a source; the entries of a synced source take its (new) claims. */
  async put(source: SourceDefinition, origin: Origin, sql?: SqlRunner): Promise<{ created: boolean; record: SourceRecord }> {
    if (sql === undefined) return this.#db.transaction((tx) => this.put(source, origin, tx));
    const existing = await this.get(source.name, sql);
    if (existing !== null && existing.kind !== source.kind) await this.#refuseKindChange(existing, source, sql);
    const claims = JSON.stringify(source.claims);
    const pairs = resourceClaimPairs(source.claims);
    const git = source.git === null ? null : JSON.stringify(source.git);
    const settings = source.api !== null ? JSON.stringify({ api: source.api }) : source.cluster !== null ? JSON.stringify({ cluster: source.cluster }) : null;
    const rows = await sql.query<SourceRow & { inserted: boolean }>(
      `INSERT INTO sources (name, kind, format, file_path, git, sync_interval_ms, claims, claim_pairs, origin, settings)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8::text[], $9, $10::jsonb)
       ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind, format = EXCLUDED.format, file_path = EXCLUDED.file_path,
         git = EXCLUDED.git, settings = EXCLUDED.settings, sync_interval_ms = EXCLUDED.sync_interval_ms, claims = EXCLUDED.claims,
         claim_pairs = EXCLUDED.claim_pairs, origin = EXCLUDED.origin, updated_at = now(),
         sync_status = CASE
           WHEN sources.kind IS DISTINCT FROM EXCLUDED.kind THEN NULL
           -- Read from somewhere else now: the next read is a full one (what was read is kept).
           WHEN sources.file_path IS DISTINCT FROM EXCLUDED.file_path OR sources.git IS DISTINCT FROM EXCLUDED.git
             OR sources.settings IS DISTINCT FROM EXCLUDED.settings THEN sources.sync_status - 'digest' - 'revision'
           ELSE sources.sync_status END
       RETURNING ${COLUMNS}, (xmax = 0) AS inserted`,
      [source.name, source.kind, source.format, source.file?.path ?? null, git, source.syncIntervalMs, claims, pairs, origin, settings],
    );
    // Entries of synced sources inherit the source's claims; cluster entries carry their own.
    if (source.kind !== 'managed' && source.kind !== 'cluster') {
      await sql.query(
        'UPDATE entries SET claims = $2::jsonb, claim_pairs = $3::text[] WHERE source = $1 AND claim_pairs IS DISTINCT FROM $3::text[]',
        [source.name, claims, pairs],
      );
    }
    const row = rows[0]!;
    return { created: row.inserted, record: toRecord(row) };
  }

  /** A managed source with published entries does not silently become a synced one (its entries would be lost). */
  async #refuseKindChange(existing: SourceRecord, source: SourceDefinition, sql: SqlRunner): Promise<void> {
    if (existing.kind !== 'managed') return;
    const rows = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM entries WHERE source = $1', [source.name]);
    const count = rows[0]?.n ?? 0;
    if (count > 0) {
      throw registryError(
        'source_in_use',
        `source ${JSON.stringify(source.name)} is a managed source holding ${count} published entr${count === 1 ? 'y' : 'ies'}: it cannot become a ${source.kind} source (delete its entries first, or use another name)`,
      );
    }
  }

  /** Deletes a source and its entries; refused (409) while a registry lists it. */
  async delete(name: string): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const users = await this.registriesUsing(name, tx);
      if (users.length > 0) {
        throw registryError('source_in_use', `source ${JSON.stringify(name)} is used by registr${users.length === 1 ? 'y' : 'ies'} ${users.join(', ')}: remove it from them first`, { extra: { registries: users } });
      }
      const rows = await tx.query<{ name: string }>('DELETE FROM sources WHERE name = $1 RETURNING name', [name]);
      return rows.length > 0;
    });
  }

  async registriesUsing(name: string, sql: SqlRunner = this.#db): Promise<string[]> {
    const rows = await sql.query<{ registry: string }>('SELECT registry FROM registry_sources WHERE source = $1 ORDER BY registry', [name]);
    return rows.map((row) => row.registry);
  }

  /** Live (not deleted) versions of a source's entries, by kind. */
  async liveVersions(name: string): Promise<{ servers: number; skills: number }> {
    const rows = await this.#db.query<{ kind: string; n: number }>(
      'SELECT e.kind, count(*)::int AS n FROM entries e JOIN entry_versions v ON v.entry_id = e.id WHERE e.source = $1 AND v.deleted_at IS NULL GROUP BY e.kind',
      [name],
    );
    return { servers: rows.find((r) => r.kind === 'server')?.n ?? 0, skills: rows.find((r) => r.kind === 'skill')?.n ?? 0 };
  }

  async setSyncStatus(name: string, status: SyncStatus, sql: SqlRunner = this.#db): Promise<void> {
    await sql.query('UPDATE sources SET sync_status = $2::jsonb WHERE name = $1', [name, JSON.stringify(status)]);
  }
}

/** A status as stored; rows written before the sync fields existed (`state`) read as today's shape. */
function syncStatusOf(stored: (Partial<SyncStatus> & { state?: SyncStatus['phase'] }) | null): SyncStatus | null {
  if (stored === null) return null;
  return {
    phase: stored.phase ?? stored.state ?? 'pending',
    lastAttemptAt: stored.lastAttemptAt ?? null,
    lastSuccessAt: stored.lastSuccessAt ?? null,
    nextAttemptAt: stored.nextAttemptAt ?? null,
    failedAttempts: stored.failedAttempts ?? 0,
    attempts: stored.attempts ?? 0,
    message: stored.message ?? null,
    servers: stored.servers ?? 0,
    skills: stored.skills ?? 0,
    skipped: stored.skipped ?? [],
    digest: stored.digest ?? null,
    revision: stored.revision ?? null,
  };
}
