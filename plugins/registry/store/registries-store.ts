/**
 * Registries: a name, claims (the access gate) and an ordered list of sources.
 */
import { didYouMean, GatewayError } from '@gatehouse-mcp/gateway';
import type { ClaimMap } from '../../registry-authz/claims.ts';
import type { RegistryDefinition } from '../config/registry-config.ts';
import { resourceClaimPairs } from '../../registry-authz/claims.ts';
import type { Database, SqlRunner } from './database.ts';
import type { Origin, RegistryRecord } from './records.ts';
import { registryError } from '../errors.ts';

interface RegistryRow {
  name: string;
  claims: ClaimMap;
  origin: Origin;
  created_at: Date;
  updated_at: Date;
  sources: string[];
  managed: string[];
}

const SELECT = `SELECT r.name, r.claims, r.origin, r.created_at, r.updated_at,
    coalesce(array_agg(rs.source ORDER BY rs.position) FILTER (WHERE rs.source IS NOT NULL), '{}') AS sources,
    coalesce(array_agg(rs.source) FILTER (WHERE s.kind = 'managed'), '{}') AS managed
  FROM registries r
  LEFT JOIN registry_sources rs ON rs.registry = r.name
  LEFT JOIN sources s ON s.name = rs.source`;

function toRecord(row: RegistryRow): RegistryRecord {
  return {
    name: row.name,
    sources: row.sources,
    claims: row.claims,
    origin: row.origin,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    managedSource: row.managed[0] ?? null,
  };
}

export class RegistriesStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async list(): Promise<RegistryRecord[]> {
    const rows = await this.#db.query<RegistryRow>(`${SELECT} GROUP BY r.name ORDER BY r.name`);
    return rows.map(toRecord);
  }

  async get(name: string, sql: SqlRunner = this.#db): Promise<RegistryRecord | null> {
    const rows = await sql.query<RegistryRow>(`${SELECT} WHERE r.name = $1 GROUP BY r.name`, [name]);
    return rows[0] === undefined ? null : toRecord(rows[0]);
  }

  /** Creates or replaces a registry; its sources must exist, and at most one of them is managed. */
  async put(registry: RegistryDefinition, origin: Origin, sql?: SqlRunner): Promise<{ created: boolean; record: RegistryRecord }> {
    if (sql === undefined) return this.#db.transaction((tx) => this.put(registry, origin, tx));
    await checkSources(registry.sources, sql);
    const rows = await sql.query<{ inserted: boolean }>(
      `INSERT INTO registries (name, claims, claim_pairs, origin) VALUES ($1, $2::jsonb, $3::text[], $4)
       ON CONFLICT (name) DO UPDATE SET claims = EXCLUDED.claims, claim_pairs = EXCLUDED.claim_pairs, origin = EXCLUDED.origin, updated_at = now()
       RETURNING (xmax = 0) AS inserted`,
      [registry.name, JSON.stringify(registry.claims), resourceClaimPairs(registry.claims), origin],
    );
    await sql.query('DELETE FROM registry_sources WHERE registry = $1', [registry.name]);
    if (registry.sources.length > 0) {
      await sql.query(
        `INSERT INTO registry_sources (registry, source, position)
         SELECT $1, source, position::int FROM unnest($2::text[]) WITH ORDINALITY AS s (source, position)`,
        [registry.name, registry.sources],
      );
    }
    const record = await this.get(registry.name, sql);
    return { created: rows[0]!.inserted, record: record! };
  }

  async delete(name: string, sql: SqlRunner = this.#db): Promise<boolean> {
    const rows = await sql.query<{ name: string }>('DELETE FROM registries WHERE name = $1 RETURNING name', [name]);
    return rows.length > 0;
  }
}

async function checkSources(names: readonly string[], sql: SqlRunner): Promise<void> {
  if (names.length === 0) return;
  const rows = await sql.query<{ name: string; kind: string }>('SELECT name, kind FROM sources WHERE name = ANY($1::text[])', [names]);
  const kinds = new Map(rows.map((row) => [row.name, row.kind]));
  const missing = names.filter((name) => !kinds.has(name));
  if (missing.length > 0) {
    const all = await sql.query<{ name: string }>('SELECT name FROM sources ORDER BY name');
    const known = all.map((row) => row.name);
    const hint = missing.length === 1 ? didYouMean(missing[0]!, known) : '';
    throw registryError('unknown_source', `unknown source${missing.length === 1 ? '' : 's'} ${missing.map((n) => JSON.stringify(n)).join(', ')}${hint}: create ${missing.length === 1 ? 'it' : 'them'} first`);
  }
  const managed = names.filter((name) => kinds.get(name) === 'managed');
  if (managed.length > 1) {
    throw new GatewayError('invalid_request', `a registry lists at most one managed source (publishing writes into it): ${managed.join(', ')} are all managed`);
  }
}
