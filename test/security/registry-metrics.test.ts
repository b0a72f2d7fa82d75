/**
 * The registry's /metrics under full authorization, served on the main listener (no
 * server.admin): its sync metrics name every source and count its entries, so it is the
 * superAdmin's, not any caller's with a token. Sources scoped to claims a caller does not hold
 * are 404 to them in the admin API; /metrics must not list them either.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startIssuer, type TestIssuer } from '../registry/helpers/issuer.ts';
import { providersYaml, startTestRegistry, tempDir, type TestRegistry } from '../registry/helpers/registry.ts';

describe("the registry's /metrics under full authorization", () => {
  let provider: TestIssuer;
  let registry: TestRegistry;
  before(async () => {
    provider = await startIssuer('registry');
    const dir = await tempDir();
    await writeFile(join(dir, 'merger.json'), JSON.stringify({ data: { servers: [{ name: 'io.acme/merger-tool', version: '1.0.0', description: 'x' }] } }));
    registry = await startTestRegistry(
      providersYaml(
        [{ name: 'corp', issuer: provider.url }],
        '  authz:\n    roles:\n      superAdmin: [{role: root}]\n      manageSources: [{role: admin}]',
        `sources:
  - {name: project-merger-acquisition, file: {path: ./merger.json}, syncPolicy: {interval: 1h}, claims: {team: corp-dev}}
registries: [{name: deals, sources: [project-merger-acquisition], claims: {team: corp-dev}}]
database: {type: memory}
`,
      ),
      dir,
    );
  });
  after(async () => {
    await registry.stop();
    await provider.close();
  });

  it('a caller without superAdmin gets no metrics (they name sources hidden from it)', async () => {
    const consumer = await registry.request('GET', '/metrics', { token: await provider.token({ sub: 'someone', team: 'sales' }) });
    assert.doesNotMatch(consumer.text, /project-merger-acquisition/);
    assert.equal(consumer.status, 403, consumer.text);
    const admin = await registry.request('GET', '/metrics', { token: await provider.token({ sub: 'ops', role: 'admin', team: 'sales' }) });
    assert.equal(admin.status, 403);
    assert.equal((await registry.request('GET', '/v1/sources/project-merger-acquisition', { token: await provider.token({ sub: 'ops', role: 'admin', team: 'sales' }) })).status, 404);
    const root = await registry.request('GET', '/metrics', { token: await provider.token({ sub: 'root', role: 'root' }) });
    assert.equal(root.status, 200);
    assert.match(root.text, /gatehouse_registry_source_entries\{source="project-merger-acquisition",kind="server"\} 1/);
  });
});
