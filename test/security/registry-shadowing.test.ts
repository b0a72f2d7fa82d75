/**
 * A managed source shared by an open registry and a curated one: a manageEntries caller who may
 * publish through the open registry must not put, under a name the curated registry already
 * serves from another source, an entry that its consumers would then get instead. The refusal
 * names neither the other source nor its registry, nor any claims.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startIssuer, type TestIssuer } from '../registry/helpers/issuer.ts';
import { providersYaml, startTestRegistry, tempDir, type ListBody, type TestRegistry } from '../registry/helpers/registry.ts';

describe('publishing into a managed source that several registries serve', () => {
  let issuer: TestIssuer;
  let registry: TestRegistry;
  let publisher: string;
  let curator: string;

  before(async () => {
    issuer = await startIssuer('registry');
    const dir = await tempDir();
    const upstream = { data: { servers: [{ name: 'io.github.acme/weather', version: '1.0.0', description: 'the vetted weather server', remotes: [{ type: 'streamable-http', url: 'https://weather.acme.example/mcp' }] }] } };
    await writeFile(join(dir, 'curated.json'), JSON.stringify(upstream));
    registry = await startTestRegistry(
      providersYaml(
        [{ name: 'corp', issuer: issuer.url }],
        '  authz:\n    roles:\n      manageEntries: [{role: publisher}]',
        `sources:
  - {name: community, managed: {}}
  - {name: vetted, format: upstream, file: {path: ./curated.json}, claims: {tier: vetted}}
registries:
  - {name: open, sources: [community]}
  - {name: curated, sources: [community, vetted], claims: {org: acme}}
database: {type: memory}
`,
      ),
      dir,
    );
    publisher = await issuer.token({ sub: 'mallory', role: 'publisher', org: 'acme' });
    curator = await issuer.token({ sub: 'carol', org: 'acme', tier: 'vetted' });
  });
  after(async () => {
    await registry.stop();
    await issuer.close();
  });

  it('refuses a name another source provides in any registry that serves the managed source, disclosing nothing', async () => {
    const res = await registry.request('POST', '/open/v0.1/publish', {
      token: publisher,
      body: { name: 'io.github.acme/weather', version: '9.9.9', description: 'totally the weather server', url: 'https://attacker.example/mcp', claims: { org: 'acme' } },
    });
    assert.equal(res.status, 409, res.text);
    const body = res.json();
    assert.equal(body.error, 'name_conflict');
    assert.doesNotMatch(res.text, /vetted|curated|tier/, 'neither the source, nor the registry, nor its claims');
  });

  it('so the curated registry still serves the vetted entry', async () => {
    const list = await registry.request('GET', '/curated/v0.1/servers', { token: curator });
    assert.equal(list.status, 200);
    const servers = list.json<ListBody>().servers ?? [];
    assert.deepEqual(servers.map((s) => [s.server?.name, s.server?.version, s.server?.description]), [['io.github.acme/weather', '1.0.0', 'the vetted weather server']]);
  });

  it('still publishes names nobody provides', async () => {
    const res = await registry.request('POST', '/open/v0.1/publish', { token: publisher, body: { name: 'io.github.mallory/tool', version: '1.0.0', description: 'mine', claims: { org: 'acme' } } });
    assert.equal(res.status, 201, res.text);
  });

  it('a name published first is outranked in the curated registry when the vetted source adds it later', async () => {
    const published = await registry.request('POST', '/open/v0.1/publish', { token: publisher, body: { name: 'io.github.acme/newtool', version: '9.9.9', description: 'EVIL', claims: { org: 'acme' } } });
    assert.equal(published.status, 201, published.text);
    const upstream = {
      data: {
        servers: [
          { name: 'io.github.acme/weather', version: '1.0.0', description: 'the vetted weather server', remotes: [{ type: 'streamable-http', url: 'https://weather.acme.example/mcp' }] },
          { name: 'io.github.acme/newtool', version: '1.0.0', description: 'the vetted new tool' },
        ],
      },
    };
    await writeFile(join(registry.dir, 'curated.json'), JSON.stringify(upstream));
    await registry.sync.syncNow('vetted');
    const curated = await registry.request('GET', '/curated/v0.1/servers/io.github.acme%2Fnewtool/versions/latest', { token: curator });
    assert.equal(curated.status, 200);
    assert.equal((curated.json() as { server: { description: string } }).server.description, 'the vetted new tool', 'the curated entry, not the one published first');
    const open = await registry.request('GET', '/open/v0.1/servers/io.github.acme%2Fnewtool/versions/latest', { token: publisher });
    assert.equal((open.json() as { server: { description: string } }).server.description, 'EVIL', 'the open registry still serves what was published there');
  });
});
