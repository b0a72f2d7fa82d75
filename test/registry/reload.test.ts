/**
 * Reloading a running registry server (plugins/registry/registry-reload.ts): the file's sources,
 * registries and Secrets are applied as at start — added, changed and removed — and the sync
 * picks them up at once; a change to what was built once (database, server, sync, auth) is
 * refused as a whole, naming each part, and the running configuration keeps serving. In process,
 * and through `gatehouse registry serve` with SIGHUP.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRegistryConfig } from '../../plugins/registry/config/registry-config.ts';
import { waitFor } from '../fixtures/processes.ts';
import { serveCli } from '../helpers/cli.ts';
import { namesOf, startTestRegistry, tempDir, type ListBody, type TestRegistry } from './helpers/registry.ts';

const server = (name: string) => ({ name, version: '1.0.0', description: name });
const upstream = (...names: string[]) => JSON.stringify({ version: '1.0.0', meta: { last_updated: '2026-01-01T00:00:00Z' }, data: { servers: names.map(server), skills: [] } });

const yaml = (extra: { sources?: string; registries?: string; database?: string; auth?: string } = {}) => `auth: ${extra.auth ?? '{mode: anonymous}'}
sources:
  - {name: catalog, format: upstream, file: {path: ./catalog.json}}
${extra.sources ?? ''}registries:
  - {name: main, sources: [catalog]}
${extra.registries ?? ''}database: ${extra.database ?? '{type: memory}'}
`;

describe('registry reload', () => {
  let dir: string;
  let registry: TestRegistry;
  const list = async (name: string) => {
    const res = await registry.request('GET', `/${name}/v0.1/servers`);
    return res.status === 200 ? namesOf(res.json<ListBody>()) : res.status;
  };
  const reloadTo = async (text: string) => {
    const file = join(dir, 'next.yaml');
    await writeFile(file, text);
    return registry.reload(await loadRegistryConfig(file));
  };

  before(async () => {
    dir = await tempDir();
    await writeFile(join(dir, 'catalog.json'), upstream('io.acme/one'));
    await writeFile(join(dir, 'extra.json'), upstream('io.acme/two', 'io.acme/three'));
    registry = await startTestRegistry(yaml(), dir);
  });
  after(async () => {
    await registry.stop();
  });

  it('adds a source and a registry, syncs it at once, and removes both again', async () => {
    assert.deepEqual(await list('main'), ['io.acme/one@1.0.0']);
    assert.equal(await list('more'), 404);
    const added = await reloadTo(
      yaml({ sources: '  - {name: extra, format: upstream, file: {path: ./extra.json}}\n', registries: '  - {name: more, sources: [extra, catalog]}\n' }),
    );
    assert.equal(added.status, 'applied', JSON.stringify(added));
    if (added.status === 'applied') assert.deepEqual([added.sources.added, added.registries.added], [['extra'], ['more']]);
    await waitFor(async () => JSON.stringify(await list('more')) === JSON.stringify(['io.acme/one@1.0.0', 'io.acme/three@1.0.0', 'io.acme/two@1.0.0']), 10_000);
    assert.equal(registry.config.sources.length, 2, 'the configuration now served');

    const removed = await reloadTo(yaml());
    assert.equal(removed.status, 'applied', JSON.stringify(removed));
    if (removed.status === 'applied') assert.deepEqual([removed.sources.removed, removed.registries.removed], [['extra'], ['more']]);
    assert.equal(await list('more'), 404);
    assert.equal((await registry.request('GET', '/v1/sources/extra')).status, 404);
    assert.deepEqual(await list('main'), ['io.acme/one@1.0.0']);
    assert.equal((await reloadTo(yaml())).status, 'unchanged');
  });

  it('refuses, as a whole, changes to what was built once, naming each part', async () => {
    const outcome = await reloadTo(yaml({ database: `{type: embedded, path: "${join(dir, 'db')}"}\nsync: {maxConcurrent: 2}`, registries: '  - {name: more, sources: [catalog]}\n' }));
    assert.equal(outcome.status, 'restart-needed', JSON.stringify(outcome));
    if (outcome.status === 'restart-needed') assert.deepEqual(outcome.parts.map((p) => p.path.split(' ').at(-1)), ['database', 'sync']);
    assert.equal(await list('more'), 404, 'nothing of it was applied');
  });
});

describe('gatehouse registry serve: SIGHUP', () => {
  it('applies the changed file; a file with problems is refused and the registry keeps serving', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'catalog.json'), upstream('io.acme/one'));
    const file = join(dir, 'registry.yaml');
    await writeFile(file, yaml());
    const served = await serveCli('registry', file);
    try {
      await writeFile(file, yaml({ registries: '  - {name: more, sources: [catalog]}\n' }));
      served.child.kill('SIGHUP');
      await waitFor(() => served.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('reload applied')), 10_000);
      assert.equal((await fetch(`${served.url}/more/v0.1/servers`)).status, 200);
      await writeFile(file, yaml({ registries: '  - {name: broken, sources: [nowhere]}\n' }));
      served.child.kill('SIGHUP');
      await waitFor(() => served.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('reload refused: the configuration has')), 10_000);
      assert.ok(served.logs.some((l) => typeof l.msg === 'string' && /nowhere/.test(l.msg)), 'the problem is logged');
      assert.equal((await fetch(`${served.url}/more/v0.1/servers`)).status, 200, 'the running configuration keeps serving');
    } finally {
      assert.equal(await served.stop(), 0);
    }
  });
});
