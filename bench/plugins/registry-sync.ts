/**
 * Source syncs of a large upstream file, on each database engine:
 *
 *   node --import tsx bench/plugins/registry-sync.ts [--entries 10000] [--rounds 3]
 *
 * For PGlite in memory and PostgreSQL (a fresh database at 127.0.0.1:5432, skipped when
 * unreachable): a registry server in anonymous mode whose file source is replaced by an upstream
 * file of `--entries` servers, then, through `POST /v1/sources/{name}/sync` (wall time of the
 * request, the sync inside it):
 * - first sync (every version inserted), unchanged resync (read and hash only), a resync with
 *   1% of the documents changed;
 * - listing p50/p99 per page (`GET /{registry}/v0.1/servers?limit=100`, every page) when idle,
 *   and while a sync that changes every entry runs;
 * and, over a real git server on loopback (git's http-backend), the first sync and an unchanged
 * resync of the same file from a git source (an unchanged commit costs one ls-remote).
 * Results are printed as markdown and written to bench/results/registry-sync.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadRegistryConfig } from '../../plugins/registry/config/registry-config.ts';
import { createLogger } from '../../core/observe/log.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { startRegistry, type RunningRegistry } from '../../plugins/registry/registry-server.ts';
import { createTestDatabase } from '../../test/registry/helpers/postgres.ts';
import { startGitServer } from '../../test/fixtures/git-server.ts';
import { RESULTS_DIR } from '../load/harness.ts';

const { values } = parseArgs({ options: { entries: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '3' } } });
const ENTRIES = Number(values.entries);
const ROUNDS = Number(values.rounds);

function upstreamFile(version: string, changed: (i: number) => boolean = () => false): string {
  const servers = Array.from({ length: ENTRIES }, (_, i) => {
    const name = `io.bench.org${i % 97}/server-${String(i).padStart(6, '0')}`;
    return {
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
      name,
      description: changed(i) ? `Changed benchmark server ${i}` : `Benchmark server ${i}: reads and writes things`,
      version,
      repository: { url: `https://github.com/bench/server-${i}`, source: 'github' },
      remotes: [{ type: 'streamable-http', url: `https://server-${i}.example.com/mcp` }],
    };
  });
  return JSON.stringify({ data: { servers } });
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const median = (values: number[]): number => percentile([...values].sort((a, b) => a - b), 50);

async function timedSync(url: string, source: string): Promise<number> {
  const start = performance.now();
  const res = await fetch(`${url}/v1/sources/${source}/sync`, { method: 'POST' });
  const body = (await res.json()) as { status?: { phase: string; message: string | null } };
  const ms = performance.now() - start;
  if (res.status !== 200 || body.status?.phase !== 'ok') throw new Error(`sync of ${source} did not succeed: ${res.status} ${JSON.stringify(body.status)}`);
  return ms;
}

/** Walks every page once per round (or until `until` resolves); per-page times. */
async function walk(url: string, stopWhen: Promise<unknown> | null, rounds: number): Promise<number[]> {
  const times: number[] = [];
  let stopped = false;
  void stopWhen?.then(() => (stopped = true));
  for (let round = 0; stopWhen === null ? round < rounds : !stopped; round++) {
    let cursor: string | undefined;
    do {
      const start = performance.now();
      const res = await fetch(`${url}/main/v0.1/servers?limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      const body = (await res.json()) as { metadata: { nextCursor?: string } };
      if (res.status !== 200) throw new Error(`listing failed: ${res.status}`);
      times.push(performance.now() - start);
      cursor = body.metadata.nextCursor;
    } while (cursor !== undefined && !(stopWhen !== null && stopped));
  }
  return times.sort((a, b) => a - b);
}

interface Row {
  readonly engine: string;
  readonly firstSyncMs: number;
  readonly unchangedMs: number;
  readonly onePercentMs: number;
  readonly idle: { p50: number; p99: number; pages: number };
  readonly duringSync: { p50: number; p99: number; pages: number; syncMs: number };
}

async function start(dir: string, yaml: string): Promise<RunningRegistry> {
  const file = join(dir, 'registry.yaml');
  await writeFile(file, yaml);
  return startRegistry({ config: await loadRegistryConfig(file), port: 0, log: createLogger('silent'), metrics: new GatewayMetrics({ processMetrics: false }) });
}

async function measureFile(engine: string, database: string): Promise<Row> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-bench-sync-'));
  const file = join(dir, 'catalog.json');
  await writeFile(file, JSON.stringify({ data: { servers: [] } }));
  const registry = await start(dir, `auth: {mode: anonymous}\nsources: [{name: catalog, file: {path: ./catalog.json}, syncPolicy: {interval: 24h}}]\nregistries: [{name: main, sources: [catalog]}]\ndatabase: ${database}\n`);
  try {
    const first: number[] = [];
    const unchanged: number[] = [];
    const onePercent: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await writeFile(file, upstreamFile(`1.0.${round}`));
      first.push(await timedSync(registry.url, 'catalog'));
      unchanged.push(await timedSync(registry.url, 'catalog'));
      await writeFile(file, upstreamFile(`1.0.${round}`, (i) => i % 100 === round));
      onePercent.push(await timedSync(registry.url, 'catalog'));
    }
    await walk(registry.url, null, 1); // warm-up
    const idle = await walk(registry.url, null, ROUNDS);
    await writeFile(file, upstreamFile('2.0.0'));
    const syncStart = performance.now();
    const sync = timedSync(registry.url, 'catalog');
    const during = await walk(registry.url, sync, 1);
    await sync;
    const syncMs = performance.now() - syncStart;
    return {
      engine,
      firstSyncMs: median(first),
      unchangedMs: median(unchanged),
      onePercentMs: median(onePercent),
      idle: { p50: percentile(idle, 50), p99: percentile(idle, 99), pages: idle.length },
      duringSync: { p50: percentile(during, 50), p99: percentile(during, 99), pages: during.length, syncMs },
    };
  } finally {
    await registry.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function measureGit(): Promise<{ firstSyncMs: number; unchangedMs: number; newCommitSameContentMs: number }> {
  const git = await startGitServer();
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-bench-git-'));
  try {
    const repository = await git.createRepository('catalog.git');
    await git.commit('catalog.git', 'main', 'registry.json', JSON.stringify({ data: { servers: [] } }));
    const registry = await start(dir, `auth: {mode: anonymous}\nsources: [{name: catalog, git: {repository: "${repository}", branch: main, path: registry.json}, syncPolicy: {interval: 24h}}]\nregistries: [{name: main, sources: [catalog]}]\ndatabase: {type: memory}\n`);
    try {
      const first: number[] = [];
      const unchanged: number[] = [];
      const sameContent: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const content = upstreamFile(`1.0.${round}`);
        await git.commit('catalog.git', 'main', 'registry.json', content);
        first.push(await timedSync(registry.url, 'catalog'));
        unchanged.push(await timedSync(registry.url, 'catalog'));
        await git.commit('catalog.git', 'main', 'README.md', `round ${round}`);
        sameContent.push(await timedSync(registry.url, 'catalog'));
      }
      return { firstSyncMs: median(first), unchangedMs: median(unchanged), newCommitSameContentMs: median(sameContent) };
    } finally {
      await registry.stop();
    }
  } finally {
    await git.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  rows.push(await measureFile('PGlite (memory)', '{type: memory}'));
  const database = await createTestDatabase().catch((err: unknown) => ({ skip: String(err) }));
  if ('skip' in database) console.log(`PostgreSQL skipped: ${database.skip}`);
  else {
    try {
      rows.push(await measureFile('PostgreSQL 127.0.0.1:5432', `{type: postgres, url: "${database.url}"}`));
    } finally {
      await database.drop();
    }
  }
  const git = await measureGit();
  const f = (n: number, d = 1): string => n.toFixed(d);
  console.log(`\n### Source sync of a ${ENTRIES}-server upstream file (median of ${ROUNDS} rounds; ms of POST /v1/sources/{name}/sync)\n`);
  console.log('| engine | first sync | unchanged resync | 1% changed | listing p50/p99 idle | listing p50/p99 during a full sync (sync ms) |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(`| ${r.engine} | ${f(r.firstSyncMs, 0)} | ${f(r.unchangedMs)} | ${f(r.onePercentMs, 0)} | ${f(r.idle.p50, 2)} / ${f(r.idle.p99, 2)} | ${f(r.duringSync.p50, 2)} / ${f(r.duringSync.p99, 2)} (${f(r.duringSync.syncMs, 0)}) |`);
  }
  console.log(`\nGit source (PGlite memory, git http-backend on loopback): first sync ${f(git.firstSyncMs, 0)} ms, unchanged commit ${f(git.unchangedMs)} ms, new commit with the same file ${f(git.newCommitSameContentMs)} ms`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'registry-sync.json'), `${JSON.stringify({ node: process.version, date: new Date().toISOString(), entries: ENTRIES, rounds: ROUNDS, rows, git }, null, 2)}\n`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
