/**
 * Syncs as an operator sees them: the status of each source (phase, attempts, back-off, counts,
 * skipped items), a sync on demand, sources created and deleted through the admin API picked
 * up at once, the last good data kept through failures, and the Prometheus metrics.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ServerResponse } from 'node:http';
import { startFakePeer, type FakePeer } from '../fixtures/registry-peer.ts';
import { namesOf, startTestRegistry, tempDir, type ListBody, type TestRegistry } from './helpers/registry.ts';

const upstream = (...names: string[]) => JSON.stringify({ data: { servers: names.map((name) => ({ name, version: '1.0.0', description: name })) } });

interface Status {
  phase: string;
  message: string | null;
  lastAttemptAt: string | null;
  lastSuccessAt: string | null;
  nextAttemptAt: string | null;
  attempts: number;
  failedAttempts: number;
  servers: number;
  skills: number;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('source syncs', () => {
  let dir: string;
  let registry: TestRegistry;
  const status = async (name: string) => (await registry.request('GET', `/v1/sources/${name}`)).json<{ status: Status }>().status;
  const sync = async (name: string) => registry.request('POST', `/v1/sources/${name}/sync`);
  const waitOf = (s: Status) => Date.parse(s.nextAttemptAt!) - Date.parse(s.lastAttemptAt!);

  before(async () => {
    dir = await tempDir();
    await mkdir(join(dir, 'catalogs'));
    await writeFile(join(dir, 'good.json'), upstream('io.acme/one', 'io.acme/two'));
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources:
  - {name: good, file: {path: ./good.json}, syncPolicy: {interval: 12s}}
  - {name: broken, file: {path: ./missing.json}, syncPolicy: {interval: 12s}}
  - {name: internal, managed: {}}
registries: [{name: main, sources: [internal, good, broken]}]
sync: {fileRoot: ./catalogs}
database: {type: memory}
`,
      dir,
    );
  });
  after(async () => {
    await registry.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a synced source shows its status: phase, times, attempts, counts', async () => {
    const good = await status('good');
    assert.equal(good.phase, 'ok');
    assert.equal(good.message, null);
    assert.equal(good.attempts, 1);
    assert.equal(good.failedAttempts, 0);
    assert.deepEqual([good.servers, good.skills], [2, 0]);
    assert.ok(Date.parse(good.lastSuccessAt!) >= Date.parse(good.lastAttemptAt!));
    assert.ok(Math.abs(waitOf(good) - 12_000) < 1000, 'the next attempt is one interval away');
  });

  it('a failing source does not stop the server; it backs off 5 s, 10 s, … up to its interval', async () => {
    const first = await status('broken');
    assert.equal(first.phase, 'failed');
    assert.match(first.message ?? '', /missing\.json does not exist/);
    assert.equal(first.failedAttempts, 1);
    assert.ok(Math.abs(waitOf(first) - 5000) < 500, `first back-off ${waitOf(first)} ms`);
    const second = (await sync('broken')).json<{ status: Status }>().status;
    assert.equal(second.failedAttempts, 2);
    assert.ok(Math.abs(waitOf(second) - 10_000) < 500, `second back-off ${waitOf(second)} ms`);
    const third = (await sync('broken')).json<{ status: Status }>().status;
    assert.equal(third.failedAttempts, 3);
    assert.ok(Math.abs(waitOf(third) - 12_000) < 500, `capped at the interval: ${waitOf(third)} ms`);
    assert.equal(third.attempts, 3);
  });

  it('recovers on the next attempt once the source is fixed', async () => {
    await writeFile(join(dir, 'missing.json'), upstream('io.acme/three'));
    const res = await sync('broken');
    assert.equal(res.status, 200);
    const fixed = res.json<{ status: Status }>().status;
    assert.deepEqual([fixed.phase, fixed.failedAttempts, fixed.servers, fixed.message], ['ok', 0, 1, null]);
    assert.ok(namesOf((await registry.request('GET', '/main/v0.1/servers')).json<ListBody>()).includes('io.acme/three@1.0.0'));
  });

  it('a failure keeps the last good data', async () => {
    await writeFile(join(dir, 'good.json'), '{"data": {"servers": ');
    const failed = (await sync('good')).json<{ status: Status }>().status;
    assert.equal(failed.phase, 'failed');
    assert.match(failed.message ?? '', /not valid JSON/);
    assert.equal(failed.servers, 2, 'the counts are those of the last good data');
    const names = namesOf((await registry.request('GET', '/main/v0.1/servers')).json<ListBody>());
    assert.ok(names.includes('io.acme/one@1.0.0') && names.includes('io.acme/two@1.0.0'));
  });

  it('sync on demand: a managed source is not synced (409), an unknown one is 404', async () => {
    const managed = await sync('internal');
    assert.equal(managed.status, 409);
    assert.equal(managed.json().error, 'not_synced');
    assert.equal((await sync('nope')).status, 404);
  });

  it('a file source created through the API is synced at once, under sync.fileRoot only', async () => {
    await writeFile(join(dir, 'catalogs', 'team.json'), upstream('io.acme/team-tool'));
    const created = await registry.request('PUT', '/v1/sources/team', { body: { file: { path: join(dir, 'catalogs', 'team.json') }, syncPolicy: { interval: '1h' } } });
    assert.equal(created.status, 201, created.text);
    await until(async () => (await status('team')).phase === 'ok', 'the first sync of the new source');
    assert.equal((await status('team')).servers, 1);
    const entries = (await registry.request('GET', '/v1/sources/team/entries')).json<{ entries: { name: string }[] }>();
    assert.deepEqual(entries.entries.map((e) => e.name), ['io.acme/team-tool']);

    for (const path of [join(dir, 'good.json'), join(dir, 'catalogs', '..', 'good.json'), 'catalogs/team.json']) {
      const refused = await registry.request('PUT', '/v1/sources/outside', { body: { file: { path } } });
      assert.equal(refused.status, 400, path);
      assert.match(refused.json().error_description ?? '', /sync\.fileRoot|absolute path/);
    }
    // A link inside the root to a file outside it counts where the file really is.
    await symlink(join(dir, 'good.json'), join(dir, 'catalogs', 'escape.json'));
    const linked = await registry.request('PUT', '/v1/sources/outside', { body: { file: { path: join(dir, 'catalogs', 'escape.json') } } });
    assert.equal(linked.status, 400);
  });

  it('a source changed through the API syncs again; a deleted one stops syncing and leaves no metrics', async () => {
    await writeFile(join(dir, 'catalogs', 'other.json'), upstream('io.acme/other-a', 'io.acme/other-b'));
    const before = (await status('team')).attempts;
    const changed = await registry.request('PUT', '/v1/sources/team', { body: { file: { path: join(dir, 'catalogs', 'other.json') }, syncPolicy: { interval: '1h' } } });
    assert.equal(changed.status, 200, changed.text);
    await until(async () => (await status('team')).servers === 2, 'the sync of the changed source');
    assert.ok((await status('team')).attempts > before);
    let metrics = (await registry.request('GET', '/metrics')).text;
    assert.match(metrics, /gatehouse_registry_sync_total\{source="team",outcome="synced"\} [1-9]/);
    assert.match(metrics, /gatehouse_registry_source_entries\{source="team",kind="server"\} 2/);
    assert.equal((await registry.request('DELETE', '/v1/sources/team')).status, 204);
    metrics = (await registry.request('GET', '/metrics')).text;
    assert.doesNotMatch(metrics, /gatehouse_registry_source_entries\{source="team"/);
  });

  it('exposes attempts, durations, failures and last successes as Prometheus metrics', async () => {
    const metrics = (await registry.request('GET', '/metrics')).text;
    assert.match(metrics, /gatehouse_registry_sync_total\{source="broken",outcome="failed"\} 3/);
    assert.match(metrics, /gatehouse_registry_sync_seconds_count\{source="good"\} [1-9]/);
    assert.match(metrics, /gatehouse_registry_source_failed_attempts\{source="good"\} 1/);
    assert.match(metrics, /gatehouse_registry_source_last_success_timestamp_seconds\{source="broken"\} \d/);
  });
});

describe('a stuck source does not hold up the others', () => {
  let dir: string;
  let registry: TestRegistry;
  let peer: FakePeer;
  const held: ServerResponse[] = [];
  /** The peer answers (an empty registry) until the test makes it hold every request. */
  let stalling = false;

  before(async () => {
    dir = await tempDir();
    await writeFile(join(dir, 'catalog.json'), upstream('io.acme/one'));
    peer = await startFakePeer((_request, res) => {
      if (stalling) return void held.push(res);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ servers: [], metadata: { count: 0 } }));
    });
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources:
  - {name: stuck, api: {url: "${peer.url}"}, syncPolicy: {interval: 1h}}
  - {name: catalog, file: {path: ./catalog.json}, syncPolicy: {interval: 1h}}
registries: [{name: main, sources: [catalog, stuck]}]
sync: {maxConcurrent: 2}
database: {type: memory}
`,
      dir,
    );
  });
  after(async () => {
    for (const res of held) res.destroy();
    await registry?.stop();
    await peer?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('while one source waits on its peer, another syncs as often as it is asked', async () => {
    stalling = true;
    void registry.request('POST', '/v1/sources/stuck/sync').catch(() => {});
    await until(async () => held.length > 0, 'the stuck source to wait on its peer');
    for (const names of [['io.acme/two'], ['io.acme/two', 'io.acme/three']]) {
      await writeFile(join(dir, 'catalog.json'), upstream(...names));
      const res = await registry.request('POST', '/v1/sources/catalog/sync');
      assert.equal(res.status, 200);
      assert.equal(res.json<{ status: Status }>().status.servers, names.length);
    }
    assert.equal((await registry.request('GET', '/v1/sources/stuck')).json<{ status: Status }>().status.phase, 'syncing');
  });
});
