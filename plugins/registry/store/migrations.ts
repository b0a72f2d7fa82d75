/**
 * The registry's SQL schema, as one ordered list of migrations for every engine (PGlite embedded
 * or in memory, PostgreSQL server). `migrate` applies the pending ones in one transaction under
 * an advisory lock, so replicas starting together against one server migrate exactly once.
 *
 * Model:
 * - sources, registries, and registry_sources (a registry's sources, in priority order).
 * - entries: one MCP server or skill name within one source, with the claims all its versions
 *   share (held once, so "identical claims across versions" is structural).
 * - entry_versions: the versions of an entry, each with its server.json (or skill) document.
 * Claims are stored twice: as the map (`claims`, what the API shows) and as the set of its
 * `["key","value"]` pairs (`claim_pairs`), so that containment is the array operator `<@`.
 * Names and versions use the "C" collation: byte order, the same on every engine and locale,
 * which keeps pagination cursors stable.
 */
import type { Database } from './database.ts';

interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly string[];
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sources, registries, entries and versions',
    statements: [
      `CREATE TABLE sources (
        name text COLLATE "C" PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('managed', 'file', 'git')),
        format text,
        file_path text,
        git jsonb,
        sync_interval_ms integer,
        claims jsonb NOT NULL DEFAULT '{}',
        claim_pairs text[] NOT NULL DEFAULT '{}',
        origin text NOT NULL CHECK (origin IN ('config', 'api')),
        sync_status jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE TABLE registries (
        name text COLLATE "C" PRIMARY KEY,
        claims jsonb NOT NULL DEFAULT '{}',
        claim_pairs text[] NOT NULL DEFAULT '{}',
        origin text NOT NULL CHECK (origin IN ('config', 'api')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE TABLE registry_sources (
        registry text COLLATE "C" NOT NULL REFERENCES registries (name) ON DELETE CASCADE,
        source text COLLATE "C" NOT NULL REFERENCES sources (name),
        position integer NOT NULL,
        PRIMARY KEY (registry, source)
      )`,
      `CREATE INDEX registry_sources_by_source ON registry_sources (source)`,
      `CREATE TABLE entries (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source text COLLATE "C" NOT NULL REFERENCES sources (name) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('server', 'skill')),
        name text COLLATE "C" NOT NULL,
        claims jsonb NOT NULL DEFAULT '{}',
        claim_pairs text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (source, kind, name)
      )`,
      `CREATE INDEX entries_by_name ON entries (kind, name, source)`,
      `CREATE TABLE entry_versions (
        entry_id integer NOT NULL REFERENCES entries (id) ON DELETE CASCADE,
        version text COLLATE "C" NOT NULL,
        version_key text COLLATE "C" NOT NULL,
        document json NOT NULL,
        digest text NOT NULL,
        is_latest boolean NOT NULL DEFAULT false,
        published_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (entry_id, version)
      )`,
    ],
  },
  {
    version: 2,
    name: 'git, api and cluster sources',
    statements: [
      `ALTER TABLE sources DROP CONSTRAINT IF EXISTS sources_kind_check`,
      `ALTER TABLE sources ADD CONSTRAINT sources_kind_check CHECK (kind IN ('managed', 'file', 'git', 'api', 'cluster'))`,
      // The kind's own block (api: {url, ...}, cluster: {...}); git keeps its column.
      `ALTER TABLE sources ADD COLUMN settings jsonb`,
    ],
  },
  {
    version: 3,
    name: 'tombstones of deleted versions',
    statements: [
      // A deleted version stays as a tombstone (deleted_at set) so that mirrors following
      // updated_since learn of the deletion; the listings hide tombstones by default.
      `ALTER TABLE entry_versions ADD COLUMN deleted_at timestamptz`,
      // updated_since listings (mirrors polling for changes) find the recent versions without
      // reading every version.
      `CREATE INDEX entry_versions_by_update ON entry_versions (updated_at)`,
    ],
  },
];

/** Arbitrary constant: the advisory lock that serialises migrations across replicas. */
const MIGRATION_LOCK = '7305001914';

/** Applies the pending migrations; returns the versions it applied. */
export async function migrate(db: Database): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS registry_schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const rows = await tx.query<{ version: number }>('SELECT version FROM registry_schema_migrations');
    const applied = new Set(rows.map((row) => row.version));
    const newer = rows.find((row) => row.version > MIGRATIONS.at(-1)!.version);
    if (newer !== undefined) {
      throw new Error(`the database schema is at version ${newer.version}, newer than this gatehouse knows (${MIGRATIONS.at(-1)!.version}): upgrade gatehouse`);
    }
    const done: number[] = [];
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      for (const statement of migration.statements) await tx.query(statement);
      await tx.query('INSERT INTO registry_schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      done.push(migration.version);
    }
    return done;
  });
}
