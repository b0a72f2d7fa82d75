/**
 * File sources: a local JSON file in the upstream format, synced at start and every
 * syncPolicy.interval; a bad file keeps the last good data and the source's status says why.
 */
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseUpstreamFile } from '../../plugins/registry/sync/upstream-file.ts';
import { namesOf, startTestRegistry, tempDir, type ListBody, type TestRegistry, type VersionBody } from './helpers/registry.ts';

const server = (name: string, version: string, extra: Record<string, unknown> = {}) => ({ name, version, description: name, ...extra });
const upstream = (servers: unknown[], skills: unknown[] = []) => JSON.stringify({ $schema: 'https://example.com/schema.json', version: '1.0.0', meta: { last_updated: '2026-01-01T00:00:00Z' }, data: { servers, skills } });

interface SourceStatus {
  phase: string;
  message: string | null;
  servers: number;
  skills: number;
  lastSuccessAt: string | null;
  lastAttemptAt: string | null;
  skipped?: string[];
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('a file source', () => {
  let dir: string;
  let file: string;
  let registry: TestRegistry;
  const list = async () => namesOf((await registry.request('GET', '/main/v0.1/servers')).json<ListBody>());
  const status = async () => (await registry.request('GET', '/v1/sources/catalog')).json<{ status: SourceStatus }>().status;

  before(async () => {
    dir = await tempDir();
    file = join(dir, 'catalog.json');
    await writeFile(file, upstream([server('io.acme/a', '1.0.0'), server('io.acme/a', '1.1.0'), server('io.acme/b', '0.1.0')], [{ namespace: 'io.acme', name: 'notes', version: '1.0.0', description: 'notes' }]));
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources:
  - {name: catalog, format: upstream, file: {path: ./catalog.json}, syncPolicy: {interval: 150ms}, claims: {org: acme}}
registries: [{name: main, sources: [catalog]}]
database: {type: memory}
`,
      dir,
    );
  });
  after(async () => {
    await registry.stop();
  });

  it('is synced at start: servers, skills, "latest", and the source claims on every entry', async () => {
    assert.deepEqual(await list(), ['io.acme/a@1.0.0', 'io.acme/a@1.1.0', 'io.acme/b@0.1.0']);
    const skills = (await registry.request('GET', '/main/v0.1/skills')).json<ListBody>();
    assert.equal(skills.skills?.[0]?.skill?.name, 'notes');
    const latest = (await registry.request('GET', '/main/v0.1/servers/io.acme%2Fa/versions/latest')).json<VersionBody>();
    assert.equal(latest.server?.version, '1.1.0');
    const entries = (await registry.request('GET', '/v1/sources/catalog/entries')).json<{ entries: { claims: object }[] }>();
    assert.ok(entries.entries.every((e) => JSON.stringify(e.claims) === '{"org":"acme"}'));
    // The next sync may be under way (interval 150 ms): read the status between syncs.
    let current = await status();
    await until(async () => (current = await status()).phase !== 'syncing', 'a status between syncs');
    const { phase, message, servers, skills: skillCount } = current;
    assert.deepEqual({ phase, message, servers, skills: skillCount }, { phase: 'ok', message: null, servers: 3, skills: 1 });
  });

  it('an unchanged file changes nothing (update times stay)', async () => {
    const before = (await registry.request('GET', '/main/v0.1/servers/io.acme%2Fb/versions/0.1.0')).json<VersionBody>()._meta['io.modelcontextprotocol.registry/official'].updatedAt;
    const attempt = (await status()).lastAttemptAt;
    await until(async () => (await status()).lastAttemptAt !== attempt, 'another sync');
    const afterSync = (await registry.request('GET', '/main/v0.1/servers/io.acme%2Fb/versions/0.1.0')).json<VersionBody>()._meta['io.modelcontextprotocol.registry/official'].updatedAt;
    assert.equal(afterSync, before);
  });

  it('picks up changes at the next interval', async () => {
    await writeFile(file, upstream([server('io.acme/a', '1.1.0'), server('io.acme/a', '2.0.0'), server('io.acme/c', '1.0.0')]));
    await until(async () => (await list()).includes('io.acme/c@1.0.0'), 'the new file to be synced');
    assert.deepEqual(await list(), ['io.acme/a@1.1.0', 'io.acme/a@2.0.0', 'io.acme/c@1.0.0']);
    assert.equal((await status()).skills, 0);
  });

  it('skips invalid items, naming each with why in the status, and syncs the others', async () => {
    await writeFile(file, upstream([server('io.acme/a', '3.0.0'), server('not a name', '1.0.0'), server('io.acme/d', '^1'), server('io.acme/e', '1.0.0', { description: 'x'.repeat(150) })]));
    await until(async () => (await list()).includes('io.acme/a@3.0.0'), 'the valid item to be synced');
    const synced = await status();
    assert.equal(synced.phase, 'ok');
    assert.equal(synced.servers, 1);
    assert.equal(synced.skipped?.length, 3);
    assert.match(synced.skipped![0]!, /^data\.servers\[1\]: name "not a name" is not valid/);
    assert.match(synced.skipped![1]!, /^data\.servers\[2\]: version "\^1" is a range/);
    assert.equal(synced.skipped![2], 'data.servers[3] (io.acme/e 1.0.0): /description: must NOT have more than 100 characters');
    assert.deepEqual(await list(), ['io.acme/a@3.0.0']);
  });

  it('a file that is not JSON, or gone, keeps the last good data, and the status says why', async () => {
    const good = await list();
    await writeFile(file, '{"data": ');
    await until(async () => /not valid JSON/.test((await status()).message ?? ''), 'the JSON error');
    assert.equal((await status()).phase, 'failed');
    assert.equal((await status()).servers, 1, 'the counts are those of the last good data');
    await rm(file);
    await until(async () => /does not exist/.test((await status()).message ?? ''), 'the missing-file error');
    assert.deepEqual(await list(), good);
  });

  it('recovers when the file is fixed', async () => {
    await writeFile(file, upstream([server('io.acme/z', '1.0.0')]));
    await until(async () => (await status()).phase === 'ok', 'recovery');
    assert.deepEqual(await list(), ['io.acme/z@1.0.0']);
  });
});

describe('the upstream format', () => {
  it('accepts the official layout, and skills named by namespace and name or by a full name', () => {
    const parsed = parseUpstreamFile(upstream([server('io.x/a', '1.0.0')], [{ namespace: 'io.x', name: 'skill-a', version: '1.0.0' }, { name: 'io.x/skill-b', version: '2.0.0' }]));
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.items.map((i) => `${i.kind}:${i.name}@${i.version}`), ['server:io.x/a@1.0.0', 'skill:io.x/skill-a@1.0.0', 'skill:io.x/skill-b@2.0.0']);
  });
  it('refuses a file that is not JSON or not of the upstream shape, as a whole', () => {
    const cases: [string, RegExp][] = [
      ['{"data": ', /not valid JSON/],
      ['[]', /not in the upstream format/],
      ['{"servers": []}', /not in the upstream format/],
      ['{"data": {"servers": {}}}', /data\.servers must be a list/],
    ];
    for (const [content, pattern] of cases) {
      const parsed = parseUpstreamFile(content);
      assert.ok(!parsed.ok, content);
      assert.match(parsed.message, pattern);
    }
  });
  it('skips duplicates and bad items, naming each, and keeps the valid ones', () => {
    const cases: [unknown, RegExp][] = [
      [server('io.x/a', 'latest'), /^data\.servers\[1\]: version must be a specific version: "latest"/],
      ['string', /^data\.servers\[1\]: must be an object$/],
      [{ ...server('io.x/b', '1.0.0'), description: 'a\u0000' }, /^data\.servers\[1\] \(io\.x\/b 1\.0\.0\): the item\.description contains a NUL/],
      [server('../etc', '1.0.0'), /^data\.servers\[1\]: name "\.\.\/etc" is not valid/],
      [server('io.x/b', '1.0.0', { packages: [{ registryType: 'npm', identifier: 'b', version: 'latest', transport: { type: 'stdio' } }] }), /^data\.servers\[1\] \(io\.x\/b 1\.0\.0\): \/packages\/0\/version: must not be "latest"$/],
      [server('io.x/b', '1.0.0', { remotes: [{ type: 'streamable-http' }] }), /^data\.servers\[1\] \(io\.x\/b 1\.0\.0\): \/remotes\/0\/url: is required$/],
      [server('io.x/a', '1.0.0', { title: 'the same version again' }), /^data\.servers\[1\] \(io\.x\/a 1\.0\.0\): appears twice: the first, data\.servers\[0\], is kept$/],
    ];
    for (const [bad, pattern] of cases) {
      const parsed = parseUpstreamFile(upstream([server('io.x/a', '1.0.0'), bad, server('io.x/c', '2.0.0')]));
      assert.ok(parsed.ok, JSON.stringify(bad));
      assert.deepEqual(parsed.items.map((i) => `${i.name}@${i.version}`), ['io.x/a@1.0.0', 'io.x/c@2.0.0']);
      assert.equal(parsed.servers, 2);
      assert.equal(parsed.skipped.length, 1);
      assert.match(parsed.skipped[0]!, pattern);
    }
  });
  it('names at most 100 skipped items, then counts the others', () => {
    const parsed = parseUpstreamFile(upstream(Array.from({ length: 250 }, () => 'string')));
    assert.ok(parsed.ok);
    assert.equal(parsed.skipped.length, 101);
    assert.equal(parsed.skipped.at(-1), 'and 150 more items skipped');
  });
});
