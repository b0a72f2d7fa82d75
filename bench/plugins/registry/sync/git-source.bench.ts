/**
 * The git source reader (plugins/registry/sync/git-source.ts) over a real git server on loopback
 * (git's http-backend, test/fixtures/git-server.ts), for an upstream file of 10,000 servers:
 * - an unchanged commit: one `git ls-remote`, what a resync costs while the branch does not move;
 * - a moved commit with the same file: ls-remote, the shallow partial fetch, the blob, its digest;
 * - a full read: the same plus UTF-8 decoding and parsing the 10,000 servers;
 * - one git process start, the unit of the reader's overhead.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Bench, BenchOptions } from 'tinybench';
import type { SyncStatus } from '../../../../plugins/registry/store/records.ts';
import { createGitReader } from '../../../../plugins/registry/sync/git-source.ts';
import type { ReadOutcome } from '../../../../plugins/registry/sync/source-reader.ts';
import { startGitServer } from '../../../../test/fixtures/git-server.ts';

export const options: BenchOptions = { time: 3000, iterations: 10 };

const SERVERS = 10_000;

function upstreamFile(): string {
  const servers = Array.from({ length: SERVERS }, (_, i) => ({
    $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
    name: `io.bench.org${i % 97}/server-${String(i).padStart(6, '0')}`,
    description: `Benchmark server ${i}: reads and writes things`,
    version: `1.${i % 10}.0`,
    repository: { url: `https://github.com/bench/server-${i}`, source: 'github' },
    remotes: [{ type: 'streamable-http', url: `https://server-${i}.example.com/mcp` }],
  }));
  return JSON.stringify({ data: { servers } });
}

const status = (digest: string | null, revision: string | null): SyncStatus => ({
  phase: 'ok',
  lastAttemptAt: null,
  lastSuccessAt: null,
  nextAttemptAt: null,
  failedAttempts: 0,
  attempts: 1,
  message: null,
  servers: SERVERS,
  skills: 0,
  skipped: [],
  digest,
  revision,
});

export let sink: ReadOutcome | null = null;

export default async function register(bench: Bench): Promise<void> {
  const git = await startGitServer();
  const tempRoot = await mkdtemp(join(tmpdir(), 'gatehouse-git-bench-'));
  const url = await git.createRepository('catalog.git');
  const content = upstreamFile();
  const commit = await git.commit('catalog.git', 'main', 'registry/upstream.json', content);
  const reader = createGitReader({ repository: url, branch: 'main', path: 'registry/upstream.json', credentials: null }, { tempRoot });
  const signal = new AbortController().signal;
  const first = await reader.read({ signal, previous: null });
  if (first.type !== 'snapshot' || first.items.length !== SERVERS) throw new Error(`the first read gave ${first.type}`);
  console.log(`git source bench: ${SERVERS} servers, ${(Buffer.byteLength(content) / 1024 / 1024).toFixed(1)} MiB file`);

  bench.add(`git read, unchanged commit (ls-remote only), ${SERVERS} servers`, async () => {
    sink = await reader.read({ signal, previous: status(first.digest, commit) });
  });
  bench.add(`git read, moved commit, same file (fetch, blob, digest), ${SERVERS} servers`, async () => {
    sink = await reader.read({ signal, previous: status(first.digest, 'f'.repeat(40)) });
  });
  bench.add(`git read, full (fetch, blob, parse), ${SERVERS} servers`, async () => {
    sink = await reader.read({ signal, previous: null });
  });
  const run = promisify(execFile);
  bench.add('one git process start (git --version)', async () => {
    await run('git', ['--version']);
  });
  bench.addEventListener('complete', () => {
    void reader.close?.();
    void git.close();
    void rm(tempRoot, { recursive: true, force: true });
  });
}
