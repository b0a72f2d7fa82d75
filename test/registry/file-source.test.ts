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
    const { phase, message, servers, skills: skillCount } = await status();
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

  it('a bad file keeps the last good data, and the status says why', async () => {
    const good = await list();
    await writeFile(file, upstream([server('io.acme/a', '3.0.0'), server('not a name', '1.0.0'), server('io.acme/d', '^1')]));
    await until(async () => (await status()).phase === 'failed', 'the failed sync');
    const failed = await status();
    assert.match(failed.message ?? '', /data\.servers\[1\]: name "not a name" is not valid.*data\.servers\[2\]: version "\^1" is a range/);
    assert.equal(failed.servers, 3, 'the counts are those of the last good data');
    assert.deepEqual(await list(), good);

    await writeFile(file, '{"data": ');
    await until(async () => /not valid JSON/.test((await status()).message ?? ''), 'the JSON error');
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
  it('refuses other layouts, duplicates and bad items, naming them', () => {
    const cases: [string, RegExp][] = [
      ['[]', /not in the upstream format/],
      ['{"servers": []}', /not in the upstream format/],
      ['{"data": {"servers": {}}}', /data\.servers: must be a list/],
      [upstream([server('io.x/a', '1.0.0'), server('io.x/a', '1.0.0')]), /data\.servers\[1\]: server "io\.x\/a" version "1\.0\.0" appears twice/],
      [upstream([server('io.x/a', 'latest')]), /"latest"/],
      [upstream(['string']), /data\.servers\[0\]: must be an object/],
      [upstream([{ ...server('io.x/a', '1.0.0'), description: 'a\u0000' }]), /data\.servers\[0\]: the item\.description contains a NUL/],
      [upstream([server('../etc', '1.0.0')]), /data\.servers\[0\]: name "\.\.\/etc" is not valid/],
    ];
    for (const [content, pattern] of cases) {
      const parsed = parseUpstreamFile(content);
      assert.ok(!parsed.ok, content);
      assert.match(parsed.message, pattern);
    }
  });
});
