/**
 * The cross-process sync lock on PostgreSQL, attacked by a manageSources caller who creates
 * sources through the admin API: their sources must not hold up the operator's, nor the server.
 * A registry server on a fresh PostgreSQL database, a peer on loopback that never answers.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../registry/helpers/postgres.ts';
import { startTestRegistry, tempDir, type TestRegistry } from '../registry/helpers/registry.ts';

interface Status {
  phase: string;
  servers: number;
  message: string | null;
}

const upstream = (...names: string[]) => JSON.stringify({ data: { servers: names.map((name) => ({ name, version: '1.0.0', description: name })) } });

/** A peer that takes every request and never answers (until closed). */
async function stallingPeer(): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  const held: ServerResponse[] = [];
  const server = createServer((_req, res) => void held.push(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests: () => held.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const database = await createTestDatabase();

describe('the sync lock on PostgreSQL', { skip: 'skip' in database ? database.skip : false }, () => {
  const db = database as TestDatabase;
  let peer: Awaited<ReturnType<typeof stallingPeer>>;
  const registries: TestRegistry[] = [];

  before(async () => {
    peer = await stallingPeer();
  });
  after(async () => {
    await peer?.close();
    for (const registry of registries) await registry.stop();
    await db.drop();
  });

  it('a source created through the API cannot take the lock of another source (names whose 32-bit hashtext collide)', { timeout: 60_000 }, async () => {
    // hashtext('s14208') = hashtext('s189525'): found in a second among 400,000 names; a target's
    // own name takes about 2^32 tries offline.
    const dir = await tempDir();
    await writeFile(join(dir, 'victim.json'), upstream('io.acme/one'));
    const registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources: [{name: s14208, file: {path: ./victim.json}, syncPolicy: {interval: 1h}}]
registries: [{name: main, sources: [s14208]}]
sync: {allowPrivateAddresses: true}
database: {type: postgres, url: "${db.url}"}
`,
      dir,
    );
    registries.push(registry);
    const put = await registry.request('PUT', '/v1/sources/s189525', { body: { api: { url: peer.url }, syncPolicy: { interval: '1h' } } });
    assert.equal(put.status, 201, put.text);
    await until(() => peer.requests() > 0, "the caller's source to be mid-sync");

    await writeFile(join(dir, 'victim.json'), upstream('io.acme/one', 'io.acme/two'));
    const synced = await registry.request('POST', '/v1/sources/s14208/sync');
    assert.equal(synced.status, 200, synced.text);
    const status = synced.json<{ status: Status }>().status;
    assert.deepEqual([status.phase, status.servers], ['ok', 2], `the operator's source did not sync: ${JSON.stringify(status)}`);
  });

  it('more syncs at once than the database pool has connections do not wedge the server', { timeout: 60_000 }, async () => {
    // sync.maxConcurrent may be up to 64; the pool has 10 connections. Each sync held one for its
    // lock and needed another for its status: 10 syncs at once waited for each other for ever.
    const dir = await tempDir();
    await writeFile(join(dir, 'catalog.json'), upstream('io.acme/one'));
    const sources = Array.from({ length: 12 }, (_, i) => `  - {name: file-${i}, file: {path: ./catalog.json}, syncPolicy: {interval: 1h}}`).join('\n');
    const starting = startTestRegistry(
      `auth: {mode: anonymous}
sources:
${sources}
registries: [{name: main, sources: [file-0]}]
sync: {maxConcurrent: 12}
database: {type: postgres, url: "${db.url}"}
`,
      dir,
    );
    const started = await Promise.race([starting, new Promise<null>((resolve) => setTimeout(resolve, 15_000, null).unref())]);
    assert.ok(started !== null, 'the server did not start within 15 s: its syncs wait for pool connections their own locks hold');
    registries.push(started);
    const listed = await Promise.race([started.request('GET', '/v1/sources'), new Promise<null>((resolve) => setTimeout(resolve, 5_000, null).unref())]);
    assert.ok(listed !== null, 'the server does not answer');
    const phases = listed
      .json<{ sources: { name: string; status: Status }[] }>()
      .sources.filter((source) => source.name.startsWith('file-'))
      .map((source) => source.status.phase);
    assert.deepEqual(phases, Array(12).fill('ok'));
  });
});
