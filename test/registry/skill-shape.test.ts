/**
 * A skill has one shape whether it was published through the API or synced from a source (a
 * file, another registry through the API): ToolHive's `{namespace, name, version, …}`, the shape
 * of the registry file's `data.skills[]` (plugins/registry/model/skill-document.ts). Both ways of
 * naming one, `{namespace, name}` and `{name: "namespace/name"}`, are read; what is stored and
 * served is the split one, byte for byte the same from every path. A row stored in the old shape
 * (`{name: "namespace/name"}`, as publishing stored it before) reads in the new one.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestRegistry, tempDir, type EntriesBody, type ListBody, type TestRegistry, type VersionBody } from './helpers/registry.ts';
import { skillFullName } from '../../plugins/registry/model/skill-document.ts';

/** The skill's fields besides its name, identical on every path. */
const BODY = {
  description: 'Turn a folder of notes into a PDF report',
  version: '1.0.0',
  title: 'PDF report',
  packages: [{ registryType: 'git', url: 'https://github.com/acme/skills.git', ref: 'v1.0.0', subfolder: 'pdf-report' }],
};
/** The document every path must serve for io.acme/pdf-report 1.0.0, key order included. */
const EXPECTED = { namespace: 'io.acme', name: 'pdf-report', ...BODY };

let peer: TestRegistry;
let registry: TestRegistry;

async function skillAt(where: TestRegistry, registryName: string, name = 'io.acme/pdf-report', version = '1.0.0'): Promise<VersionBody['skill']> {
  const res = await where.request('GET', `/${registryName}/v0.1/skills/${encodeURIComponent(name)}/versions/${version}`);
  assert.equal(res.status, 200, res.text);
  return res.json<VersionBody>().skill;
}

before(async () => {
  // The peer a registry mirrors through the API: its skill is published named "namespace/name".
  peer = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: published, managed: {}}]
registries: [{name: main, sources: [published]}]
database: {type: memory}
`);
  const published = await peer.request('POST', '/main/v0.1/publish', { body: { type: 'skill', name: 'io.acme/pdf-report', ...BODY } });
  assert.equal(published.status, 201, published.text);

  const dir = await tempDir();
  await writeFile(
    join(dir, 'catalog.json'),
    JSON.stringify({
      version: '1.0.0',
      meta: { last_updated: '2026-01-01T00:00:00Z' },
      data: {
        servers: [],
        skills: [
          { namespace: 'io.acme', name: 'pdf-report', ...BODY },
          { name: 'io.acme/full-name', version: '2.0.0', description: 'Named the other way' },
        ],
      },
    }),
  );
  registry = await startTestRegistry(
    `auth: {mode: anonymous}
sources:
  - {name: published, managed: {}}
  - {name: catalog, format: upstream, file: {path: ./catalog.json}}
  - {name: mirror, api: {url: "${peer.url}/main"}}
registries:
  - {name: pub, sources: [published]}
  - {name: file, sources: [catalog]}
  - {name: api, sources: [mirror]}
database: {type: memory}
`,
    dir,
  );
});
after(async () => {
  await registry?.stop();
  await peer?.stop();
});

describe('one skill shape on every path', () => {
  it('published named "namespace/name": stored and served as {namespace, name}', async () => {
    const res = await registry.request('POST', '/pub/v0.1/publish', { body: { type: 'skill', name: 'io.acme/pdf-report', ...BODY } });
    assert.equal(res.status, 201, res.text);
    assert.equal(JSON.stringify(res.json<VersionBody>().skill), JSON.stringify(EXPECTED), 'the publish answer');
    assert.equal(res.headers.get('location'), '/pub/v0.1/skills/io.acme%2Fpdf-report/versions/1.0.0');
    assert.equal(JSON.stringify(await skillAt(registry, 'pub')), JSON.stringify(EXPECTED));
  });

  it('published named by namespace and name (ToolHive\'s shape): the same', async () => {
    const res = await registry.request('POST', '/pub/v0.1/publish', { body: { type: 'skill', ...BODY, name: 'pdf-report', namespace: 'io.acme', version: '1.1.0' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(JSON.stringify(res.json<VersionBody>().skill), JSON.stringify({ ...EXPECTED, version: '1.1.0' }));
    const versions = (await registry.request('GET', '/pub/v0.1/skills/io.acme%2Fpdf-report/versions')).json<ListBody>();
    assert.deepEqual(versions.skills?.map((s) => s.skill?.version), ['1.1.0', '1.0.0'], 'one entry, io.acme/pdf-report, whichever way it was named');
  });

  it('synced from a file (either naming): the same document as published', async () => {
    assert.equal(JSON.stringify(await skillAt(registry, 'file')), JSON.stringify(EXPECTED));
    assert.deepEqual(await skillAt(registry, 'file', 'io.acme/full-name', '2.0.0'), { namespace: 'io.acme', name: 'full-name', version: '2.0.0', description: 'Named the other way' });
  });

  it('synced from another registry through the API: the same document as published', async () => {
    assert.equal(JSON.stringify(await skillAt(registry, 'api')), JSON.stringify(EXPECTED));
    assert.equal(JSON.stringify(await skillAt(peer, 'main')), JSON.stringify(EXPECTED), 'the peer serves it split too');
  });

  it('identical across the paths in the lists and the admin entries too', async () => {
    const listed = await Promise.all(['pub', 'file', 'api'].map(async (name) => (await registry.request('GET', `/${name}/v0.1/skills?search=pdf-report&version=1.0.0`)).json<ListBody>().skills?.[0]?.skill));
    for (const skill of listed) assert.equal(JSON.stringify(skill), JSON.stringify(EXPECTED));
    for (const source of ['published', 'catalog', 'mirror']) {
      const entries = (await registry.request('GET', `/v1/sources/${source}/entries`)).json<EntriesBody>().entries;
      const entry = entries.find((e) => e.name === 'io.acme/pdf-report');
      assert.equal(entry?.type, 'skill', source);
      const version = entry.versions.find((v) => v.version === '1.0.0') as unknown as { skill: unknown };
      assert.equal(JSON.stringify(version.skill), JSON.stringify(EXPECTED), source);
    }
  });

  it('a namespace with a "/" in name, or a namespace that is no string, is refused with the reason', async () => {
    const slash = await registry.request('POST', '/pub/v0.1/publish', { body: { type: 'skill', namespace: 'io.acme', name: 'io.acme/x', version: '1.0.0', description: 'x' } });
    assert.equal(slash.status, 400);
    assert.match(slash.json().error_description ?? '', /name "io\.acme\/x" must be the name within namespace "io\.acme", without "\/"/);
    const number = await registry.request('POST', '/pub/v0.1/publish', { body: { type: 'skill', namespace: 7, name: 'x', version: '1.0.0', description: 'x' } });
    assert.equal(number.status, 400);
    assert.match(number.json().error_description ?? '', /namespace must be a non-empty string/);
    const bad = await registry.request('POST', '/pub/v0.1/publish', { body: { type: 'skill', namespace: 'io..acme', name: 'x', version: '1.0.0', description: 'x' } });
    assert.equal(bad.status, 400);
    assert.match(bad.json().error_description ?? '', /name "io\.\.acme\/x" is not valid/);
  });
});

describe('a skill stored in the old shape', () => {
  it('reads as {namespace, name} (read-time normalisation; the row is left as it is)', async () => {
    // As publishing stored skills before there was one shape: the document named "namespace/name".
    await registry.store.entries.publish(
      { source: 'published', kind: 'skill', name: 'io.acme/legacy', version: '0.9.0', document: { name: 'io.acme/legacy', version: '0.9.0', description: 'Stored before' }, claims: {} },
      () => null,
    );
    const expected = { namespace: 'io.acme', name: 'legacy', version: '0.9.0', description: 'Stored before' };
    assert.equal(JSON.stringify(await skillAt(registry, 'pub', 'io.acme/legacy', '0.9.0')), JSON.stringify(expected));
    assert.equal(JSON.stringify(await skillAt(registry, 'pub', 'io.acme/legacy', 'latest')), JSON.stringify(expected));
    const listed = (await registry.request('GET', '/pub/v0.1/skills?search=legacy')).json<ListBody>();
    assert.equal(JSON.stringify(listed.skills?.[0]?.skill), JSON.stringify(expected));
    const entries = (await registry.request('GET', '/v1/registries/pub/entries')).json<EntriesBody>().entries;
    const version = entries.find((e) => e.name === 'io.acme/legacy')?.versions[0] as unknown as { skill: unknown };
    assert.equal(JSON.stringify(version.skill), JSON.stringify(expected));
    const deleted = await registry.request('DELETE', '/pub/v0.1/skills/io.acme%2Flegacy/versions/0.9.0');
    assert.equal(JSON.stringify(deleted.json<VersionBody>().skill), JSON.stringify(expected), 'the tombstone');
    const rows = await registry.store.db.query<{ document: unknown }>(
      "SELECT v.document FROM entry_versions v JOIN entries e ON e.id = v.entry_id WHERE e.name = 'io.acme/legacy'",
    );
    assert.deepEqual(rows[0]?.document, { name: 'io.acme/legacy', version: '0.9.0', description: 'Stored before' }, 'no migration rewrote the row');
  });
});

describe('how a skill is named', () => {
  it('a null namespace counts as none, as before there was one shape (a peer writing namespace: null keeps its skills)', () => {
    assert.deepEqual(skillFullName({ namespace: null, name: 'io.github.acme/pdf-report' }), { ok: true, fullName: 'io.github.acme/pdf-report' });
    assert.deepEqual(skillFullName({ namespace: 'io.github.acme', name: 'pdf-report' }), { ok: true, fullName: 'io.github.acme/pdf-report' });
    assert.equal(skillFullName({ namespace: 7, name: 'pdf-report' }).ok, false);
  });
});
