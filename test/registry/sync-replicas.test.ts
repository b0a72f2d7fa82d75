/**
 * Several registry processes on one PostgreSQL: a source is synced by one process at a time, and
 * a process killed in the middle of a sync leaves nothing stuck. Two `gatehouse registry serve`
 * processes share a database; their api source reads a peer registry through a proxy that can
 * hold requests unanswered, so the first process is caught mid-sync, then killed (SIGKILL).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveCli, type ServedCli } from '../helpers/cli.ts';
import { proxyTo, startFakePeer, type FakePeer } from '../fixtures/registry-peer.ts';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.ts';
import { startTestRegistry, tempDir, type TestRegistry } from './helpers/registry.ts';

interface Status {
  phase: string;
  servers: number;
  attempts: number;
}

async function until<T>(check: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const database = await createTestDatabase();

describe('registry processes sharing one PostgreSQL', { skip: 'skip' in database ? database.skip : false }, () => {
  const db = database as TestDatabase;
  let peer: TestRegistry;
  let proxy: FakePeer;
  let config: string;
  const processes: ServedCli[] = [];
  const stalled: { end(): void }[] = [];

  before(async () => {
    peer = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: public, sources: [internal]}]
database: {type: memory}
`);
    for (const name of ['io.acme/alpha', 'io.acme/beta']) {
      await peer.request('POST', '/public/v0.1/publish', { body: { name, version: '1.0.0', description: name, url: 'https://x.example.com/mcp' } });
    }
    proxy = await startFakePeer(proxyTo(peer.url));
    const dir = await tempDir();
    config = join(dir, 'registry.yaml');
    await writeFile(
      config,
      `auth: {mode: anonymous}
sources: [{name: peer, api: {url: "${proxy.url}/public"}, syncPolicy: {interval: 1h}}]
registries: [{name: main, sources: [peer]}]
database: {type: postgres, url: "${db.url}"}
`,
    );
  });
  after(async () => {
    for (const res of stalled) res.end();
    for (const served of processes) served.child.kill('SIGKILL');
    await proxy?.close();
    await peer?.stop();
    await db.drop();
  });

  it('one process syncs a source at a time; killing it mid-sync frees the source for the other', { timeout: 90_000 }, async () => {
    const first = await serveCli('registry', config);
    processes.push(first);
    const status = async (served: ServedCli) => ((await (await fetch(`${served.url}/v1/sources/peer`)).json()) as { status: Status }).status;
    assert.deepEqual([(await status(first)).phase, (await status(first)).servers], ['ok', 2]);

    // The peer changes; the proxy now holds every request unanswered.
    await peer.request('POST', '/public/v0.1/publish', { body: { name: 'io.acme/gamma', version: '1.0.0', description: 'gamma', url: 'https://x.example.com/mcp' } });
    proxy.handle((_request, res) => void stalled.push(res));
    const caught = proxy.requests.length;
    void fetch(`${first.url}/v1/sources/peer/sync`, { method: 'POST' }).catch(() => {});
    await until(async () => (await status(first)).phase === 'syncing' && proxy.requests.length > caught, 'the first process to be caught mid-sync');
    const heldByFirst = proxy.requests.length;

    // The second process starts while the first holds the source: it does not sync it too.
    const second = await serveCli('registry', config);
    processes.push(second);
    const asked = await fetch(`${second.url}/v1/sources/peer/sync`, { method: 'POST' });
    assert.equal(asked.status, 200);
    assert.equal(((await asked.json()) as { status: Status }).status.phase, 'syncing', 'it reports the other process\'s sync');
    assert.equal(proxy.requests.length, heldByFirst, 'no request of the second process reached the peer');
    assert.match(await (await fetch(`${second.url}/metrics`)).text(), /gatehouse_registry_sync_total\{source="peer",outcome="elsewhere"\} [1-9]/);

    // The first process dies in the middle of its sync: the source is free at once.
    first.child.kill('SIGKILL');
    await first.exited;
    proxy.handle(proxyTo(peer.url));
    const synced = await until(async () => {
      const res = await fetch(`${second.url}/v1/sources/peer/sync`, { method: 'POST' });
      const body = (await res.json()) as { status: Status };
      return body.status.phase === 'ok' && body.status.servers === 3 ? body.status : null;
    }, 'the second process to sync the source');
    assert.equal(synced.servers, 3);
    const listing = (await (await fetch(`${second.url}/main/v0.1/servers`)).json()) as { servers: { server: { name: string } }[] };
    assert.deepEqual(listing.servers.map((s) => s.server.name), ['io.acme/alpha', 'io.acme/beta', 'io.acme/gamma']);
    assert.equal(await second.stop(), 0);
  });
});
