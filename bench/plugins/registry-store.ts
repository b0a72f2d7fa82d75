/**
 * Registry listing and publishing over HTTP, on each database engine:
 *
 *   node --import tsx bench/plugins/registry-store.ts [--entries 10000] [--rounds 5] [--publishes 500]
 *
 * For PGlite in memory, PGlite embedded (on a temp dir) and PostgreSQL (a fresh database at
 * 127.0.0.1:5432, skipped when unreachable): a registry server under full authorization whose
 * managed source holds `--entries` entries with four claim sets (a restricted caller sees half),
 * then
 * - p50/p99 per page of `GET /{registry}/v0.1/servers?limit=100`, walking every page, as the
 *   restricted caller (claims filtering in the query) and as superAdmin (no filter);
 * - publish throughput: `--publishes` POSTs one after another, then 8 at a time.
 * Results are printed as markdown and written to bench/results/registry-store.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { DatabaseConfig, RegistryConfig } from '../../plugins/registry/config/registry-config.ts';
import { createLogger } from '../../core/observe/log.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { resourceClaimPairs } from '../../plugins/registry-authz/claims.ts';
import { refreshLatest } from '../../plugins/registry/store/entry-sql.ts';
import { documentDigest } from '../../plugins/registry/store/entries-store.ts';
import { versionSortKey } from '../../plugins/registry/store/version-order.ts';
import { startRegistry, type RunningRegistry } from '../../plugins/registry/registry-server.ts';
import { createTestDatabase } from '../../test/registry/helpers/postgres.ts';
import { startIssuer, type TestIssuer } from '../../test/registry/helpers/issuer.ts';
import { RESULTS_DIR } from '../load/harness.ts';
import { SecretStore } from '../../core/config/secrets.ts';
import { TELEMETRY_OFF } from '../../core/observe/telemetry/telemetry-settings.ts';
import { AUDIT_OFF } from '../../core/observe/audit/audit-settings.ts';

const { values } = parseArgs({ options: { entries: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '5' }, publishes: { type: 'string', default: '500' } } });
const ENTRIES = Number(values.entries);
const ROUNDS = Number(values.rounds);
const PUBLISHES = Number(values.publishes);
const CLAIM_SETS: Readonly<Record<string, string>>[] = [{ org: 'acme' }, { org: 'acme', team: 'a' }, { org: 'acme', team: 'b' }, { org: 'other' }];

function config(database: DatabaseConfig, issuer: string): RegistryConfig {
  return {
    file: '/bench/registry.yaml',
    dir: '/bench',
    auth: {
      mode: 'oauth',
      resourceUrl: 'http://127.0.0.1/',
      realm: 'bench',
      providers: [{ name: 'bench', issuerUrl: issuer, audience: 'registry', allowPrivateIp: false }],
      authz: { roles: { superAdmin: [{ role: 'root' }], manageEntries: [{ role: 'writer' }] } },
    },
    sources: [{ name: 'internal', kind: 'managed', format: null, file: null, git: null, api: null, cluster: null, syncIntervalMs: null, claims: {} }],
    registries: [{ name: 'bench', sources: ['internal'], claims: { org: 'acme' } }],
    database,
    server: { maxBodyBytes: 1024 * 1024, allowedHosts: [], allowedOrigins: [], shutdownGraceMs: 1000, requestTimeoutMs: 60_000, accessLog: false, engine: 'gatehouse', admin: null, trustedProxies: [], limits: { maxConnections: 10_000, maxPipelinedRequests: 16, maxSessionRequests: 64, maxStreamBuffer: 4 * 1024 * 1024, sendTimeoutMs: 60_000 }, workers: 1 },
    sync: { allowPrivateAddresses: false, fileRoot: null, maxConcurrent: 4 },
    telemetry: TELEMETRY_OFF,
    audit: AUDIT_OFF,
    secrets: new SecretStore(),
  };
}

/** Bulk-loads the entries straight into the store (what a big sync writes). */
async function seed(registry: RunningRegistry): Promise<void> {
  const db = registry.store.db;
  const entries = Array.from({ length: ENTRIES }, (_, i) => {
    const claims = CLAIM_SETS[i % CLAIM_SETS.length]!;
    return { name: `io.bench.org${i % 97}/server-${String(i).padStart(6, '0')}`, claims, claim_pairs: resourceClaimPairs(claims) };
  });
  const ids = await db.query<{ id: number; name: string }>(
    `INSERT INTO entries (source, kind, name, claims, claim_pairs)
     SELECT 'internal', 'server', r.name, r.claims, ARRAY(SELECT jsonb_array_elements_text(r.claim_pairs))
     FROM jsonb_to_recordset($1::jsonb) AS r (name text, claims jsonb, claim_pairs jsonb) RETURNING id, name`,
    [JSON.stringify(entries)],
  );
  const versions = ids.map(({ id, name }) => {
    const document = {
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
      name,
      description: `Benchmark server ${name}: reads and writes things for the agents that call it`,
      version: '1.0.0',
      repository: { url: `https://github.com/bench/${name.split('/')[1]}`, source: 'github' },
      remotes: [{ type: 'streamable-http', url: `https://${name.split('/')[1]}.example.com/mcp` }],
    };
    return { entry_id: id, version: '1.0.0', version_key: versionSortKey('1.0.0'), document, digest: documentDigest(document) };
  });
  await db.query(
    `INSERT INTO entry_versions (entry_id, version, version_key, document, digest)
     SELECT r.entry_id, r.version, r.version_key, r.document, r.digest FROM json_to_recordset($1::json) AS r (entry_id int, version text, version_key text, document json, digest text)`,
    [JSON.stringify(versions)],
  );
  await refreshLatest(db, { source: 'internal' });
  // What a sync of this size triggers on the embedded engine; a PostgreSQL server's autovacuum
  // would analyze within its naptime, done here at once.
  registry.store.statistics.noteChanges(ENTRIES * 2);
  await registry.store.statistics.idle();
  if (db.kind === 'postgres') await db.query('ANALYZE');
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface WalkResult {
  readonly pages: number;
  readonly items: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

async function walk(url: string, token: string, rounds = ROUNDS): Promise<WalkResult> {
  const times: number[] = [];
  let items = 0;
  let pages = 0;
  for (let round = 0; round < rounds; round++) {
    let cursor: string | undefined;
    do {
      const start = performance.now();
      const res = await fetch(`${url}/bench/v0.1/servers?limit=100${cursor === undefined ? '' : `&cursor=${cursor}`}`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { servers: unknown[]; metadata: { nextCursor?: string } };
      if (res.status !== 200) throw new Error(`listing failed: ${res.status} ${JSON.stringify(body)}`);
      times.push(performance.now() - start);
      items += body.servers.length;
      pages++;
      cursor = body.metadata.nextCursor;
    } while (cursor !== undefined);
  }
  times.sort((a, b) => a - b);
  return { pages: pages / rounds, items: items / rounds, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) };
}

async function publishRate(url: string, token: string, concurrency: number, tag: string): Promise<number> {
  let next = 0;
  const start = performance.now();
  const worker = async (): Promise<void> => {
    while (next < PUBLISHES) {
      const i = next++;
      const res = await fetch(`${url}/bench/v0.1/publish`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `io.bench.${tag}/published-${i}`, version: '1.0.0', description: 'published by the benchmark', url: 'https://x.example.com/mcp', claims: { org: 'acme', team: 'a' } }),
      });
      if (res.status !== 201) throw new Error(`publish failed: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return PUBLISHES / ((performance.now() - start) / 1000);
}

interface Row {
  readonly engine: string;
  readonly filtered: WalkResult;
  readonly unfiltered: WalkResult;
  readonly publishSerial: number;
  readonly publishConcurrent: number;
}

async function measure(engine: string, database: DatabaseConfig, issuer: TestIssuer): Promise<Row> {
  const registry = await startRegistry({ config: config(database, issuer.url), port: 0, log: createLogger('silent'), metrics: new GatewayMetrics({ processMetrics: false }) });
  try {
    await seed(registry);
    const restricted = await issuer.token({ sub: 'reader', org: 'acme', team: ['a', 'x'], role: 'writer' });
    const root = await issuer.token({ sub: 'root', role: 'root' });
    // Warm-up: PGlite's WebAssembly engine and V8 need a few hundred queries to reach steady state.
    for (let i = 0; i < 3; i++) {
      await walk(registry.url, restricted, 1);
      await walk(registry.url, root, 1);
    }
    const filtered = await walk(registry.url, restricted);
    const unfiltered = await walk(registry.url, root);
    const publishSerial = await publishRate(registry.url, restricted, 1, 'serial');
    const publishConcurrent = await publishRate(registry.url, restricted, 8, 'concurrent');
    return { engine, filtered, unfiltered, publishSerial, publishConcurrent };
  } finally {
    await registry.stop();
  }
}

async function main(): Promise<void> {
  const issuer = await startIssuer('registry');
  const rows: Row[] = [];
  try {
    rows.push(await measure('PGlite (memory)', { type: 'memory' }, issuer));
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-bench-'));
    rows.push(await measure('PGlite (embedded, on disk)', { type: 'embedded', path: join(dir, 'data') }, issuer));
    await rm(dir, { recursive: true, force: true });
    const database = await createTestDatabase().catch((err: unknown) => ({ skip: String(err) }));
    if ('skip' in database) console.log(`PostgreSQL skipped: ${database.skip}`);
    else {
      try {
        rows.push(await measure('PostgreSQL 127.0.0.1:5432', { type: 'postgres', url: database.url }, issuer));
      } finally {
        await database.drop();
      }
    }
  } finally {
    await issuer.close();
  }
  const f = (n: number, d = 1): string => n.toFixed(d);
  console.log(`\n### Registry listing (${ENTRIES} entries, limit=100, every page, ${ROUNDS} rounds) and publishing (${PUBLISHES} per run)\n`);
  console.log('| engine | filtered: pages | p50 ms | p99 ms | superAdmin: pages | p50 ms | p99 ms | publish/s serial | publish/s 8 concurrent |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(`| ${r.engine} | ${r.filtered.pages} | ${f(r.filtered.p50Ms, 2)} | ${f(r.filtered.p99Ms, 2)} | ${r.unfiltered.pages} | ${f(r.unfiltered.p50Ms, 2)} | ${f(r.unfiltered.p99Ms, 2)} | ${f(r.publishSerial, 0)} | ${f(r.publishConcurrent, 0)} |`);
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'registry-store.json'), `${JSON.stringify({ node: process.version, date: new Date().toISOString(), entries: ENTRIES, rounds: ROUNDS, rows }, null, 2)}\n`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
