/**
 * Tombstones: a deleted version (DELETE, or gone from a synced source) stays as `status:
 * "deleted"` with its deletion time as `updatedAt`; it is hidden from every listing and get,
 * listed with include_deleted=true and always by updated_since; `latest` never names it; a
 * deleted version cannot be published again (409); one that comes back to a synced source is
 * revived. Versions are listed newest publication first. The writers: incremental changes
 * (applySourceChanges) and per-entry claims. On PGlite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { documentDigest } from '../../plugins/registry/store/entries-store.ts';
import { applySourceChanges, writeSourceEntries, type SyncItem } from '../../plugins/registry/store/source-sync-writer.ts';
import { openStore, type Store } from '../../plugins/registry/store/store.ts';
import { describeOnEngines } from './helpers/engines.ts';
import { namesOf, startTestRegistry, tempDir, type Body, type ListBody, type TestRegistry, type VersionBody } from './helpers/registry.ts';
import { fileSource, managed } from './helpers/store-suite.ts';

const OFFICIAL = 'io.modelcontextprotocol.registry/official';
const server = (name: string, version: string, extra: Record<string, unknown> = {}) => ({ name, version, description: `${name} ${version}`, ...extra });
const upstream = (servers: unknown[]) => JSON.stringify({ data: { servers } });
const meta = (body: VersionBody) => body._meta[OFFICIAL];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeOnEngines('tombstones through the API', (engine) => {
  let registry: TestRegistry;
  let file: string;
  before(async () => {
    if (engine.skip !== null) return;
    const dir = await tempDir();
    file = join(dir, 'catalog.json');
    await writeFile(file, upstream([server('io.files/kept', '1.0.0'), server('io.files/leaving', '1.0.0'), server('io.files/leaving', '2.0.0')]));
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources:
  - {name: internal, managed: {}}
  - {name: catalog, file: {path: ./catalog.json}, syncPolicy: {interval: 1h}}
registries: [{name: main, sources: [internal, catalog]}]
${engine.databaseYaml}
`,
      dir,
    );
  });
  after(async () => {
    await registry?.stop();
  });
  const get = (path: string) => registry.request('GET', `/main/v0.1${path}`);
  const publish = (version: string) => registry.request('POST', '/main/v0.1/publish', { body: server('io.acme/tool', version) });
  const del = (version: string) => registry.request('DELETE', `/main/v0.1/servers/io.acme%2Ftool/versions/${version}`);
  const sync = async () => assert.equal((await registry.request('POST', '/v1/sources/catalog/sync')).status, 200);
  let beforeDelete: string;

  engine.test('versions are listed newest publication first', async () => {
    for (const version of ['1.0.0', '2.0.0', '1.5.0']) {
      assert.equal((await publish(version)).status, 201);
      await pause(5);
    }
    const versions = (await get('/servers/io.acme%2Ftool/versions')).json<ListBody>();
    assert.deepEqual(namesOf(versions), ['io.acme/tool@1.5.0', 'io.acme/tool@2.0.0', 'io.acme/tool@1.0.0']);
    assert.deepEqual(versions.servers!.map((v) => meta(v).isLatest), [false, true, false]);
  });

  engine.test('DELETE answers the tombstone: status deleted, updatedAt the deletion time, not latest', async () => {
    beforeDelete = new Date().toISOString();
    await pause(5);
    const res = await del('2.0.0');
    assert.equal(res.status, 200, res.text);
    const tombstone = meta(res.json<VersionBody>());
    assert.equal(tombstone.status, 'deleted');
    assert.equal(tombstone.isLatest, false);
    assert.ok(tombstone.updatedAt > beforeDelete && tombstone.updatedAt > tombstone.publishedAt);
  });

  engine.test('a tombstone is hidden from every listing and get; latest moves to the highest live version', async () => {
    assert.deepEqual(namesOf((await get('/servers?search=acme')).json<ListBody>()), ['io.acme/tool@1.0.0', 'io.acme/tool@1.5.0']);
    assert.deepEqual(namesOf((await get('/servers?search=acme&version=2.0.0')).json<ListBody>()), []);
    assert.deepEqual(namesOf((await get('/servers/io.acme%2Ftool/versions')).json<ListBody>()), ['io.acme/tool@1.5.0', 'io.acme/tool@1.0.0']);
    assert.equal((await get('/servers/io.acme%2Ftool/versions/2.0.0')).status, 404);
    assert.equal(meta((await get('/servers/io.acme%2Ftool/versions/latest')).json<VersionBody>()).isLatest, true);
    assert.equal((await get('/servers/io.acme%2Ftool/versions/latest')).json<VersionBody>().server?.version, '1.5.0');
    const entries = (await registry.request('GET', '/v1/sources/internal/entries')).json<{ entries: { versions: { version: string }[] }[] }>();
    assert.deepEqual(entries.entries[0]!.versions.map((v) => v.version), ['1.5.0', '1.0.0']);
  });

  engine.test('include_deleted=true lists it, on the list, the versions and the get', async () => {
    const all = (await get('/servers?search=acme&include_deleted=true')).json<ListBody>();
    assert.deepEqual(all.servers!.map((v) => `${v.server!.version}:${meta(v).status}`), ['1.0.0:active', '1.5.0:active', '2.0.0:deleted']);
    assert.deepEqual(namesOf((await get('/servers/io.acme%2Ftool/versions?include_deleted=true')).json<ListBody>()), ['io.acme/tool@1.5.0', 'io.acme/tool@2.0.0', 'io.acme/tool@1.0.0']);
    const one = await get('/servers/io.acme%2Ftool/versions/2.0.0?include_deleted=true');
    assert.equal(one.status, 200);
    assert.equal(meta(one.json<VersionBody>()).status, 'deleted');
    assert.equal(meta((await get('/servers/io.acme%2Ftool/versions/latest?include_deleted=true')).json<VersionBody>()).status, 'active', 'latest never names a tombstone');
    assert.equal((await get('/servers?include_deleted=maybe')).status, 400);
    assert.match((await get('/servers/io.acme%2Ftool/versions?include_deleted=1')).json<Body>().error_description ?? '', /include_deleted must be true or false/);
  });

  engine.test('updated_since always reports deletions (it implies include_deleted), and only what changed', async () => {
    const since = (await get(`/servers?updated_since=${beforeDelete}`)).json<ListBody>();
    // The deleted version, and 1.5.0 whose isLatest flag changed when 2.0.0 went.
    assert.deepEqual(since.servers!.map((v) => `${v.server!.version}:${meta(v).status}`), ['1.5.0:active', '2.0.0:deleted']);
  });

  engine.test('a deleted version cannot be published again: 409 version_exists saying it was deleted', async () => {
    const res = await publish('2.0.0');
    assert.equal(res.status, 409);
    assert.equal(res.json<Body>().error, 'version_exists');
    assert.match(res.json<Body>().error_description ?? '', /was published and deleted .*versions are immutable, deleted ones included/);
    assert.equal((await del('2.0.0')).status, 404, 'a tombstone cannot be deleted again');
    assert.equal((await publish('3.0.0')).status, 201, 'a new version can');
  });

  engine.test('an entry whose versions are all deleted is gone from the default views, not from include_deleted', async () => {
    for (const version of ['1.0.0', '1.5.0', '3.0.0']) assert.equal((await del(version)).status, 200);
    assert.deepEqual(namesOf((await get('/servers?search=acme')).json<ListBody>()), []);
    assert.equal((await get('/servers/io.acme%2Ftool/versions')).status, 404);
    assert.equal((await get('/servers/io.acme%2Ftool/versions/latest')).status, 404);
    assert.equal((await get('/servers/io.acme%2Ftool/versions/latest?include_deleted=true')).status, 404);
    assert.equal(namesOf((await get('/servers/io.acme%2Ftool/versions?include_deleted=true')).json<ListBody>()).length, 4);
    assert.deepEqual((await registry.request('GET', '/v1/sources/internal/entries')).json<{ entries: unknown[] }>().entries, []);
  });

  engine.test('a synced source whose content no longer has a version makes it a tombstone; a version that comes back is revived', async () => {
    const first = (await get('/servers/io.files%2Fleaving/versions/2.0.0')).json<VersionBody>();
    const mark = new Date().toISOString();
    await pause(5);
    await writeFile(file, upstream([server('io.files/kept', '1.0.0'), server('io.files/leaving', '1.0.0')]));
    await sync();
    assert.equal((await get('/servers/io.files%2Fleaving/versions/2.0.0')).status, 404);
    assert.equal((await get('/servers/io.files%2Fleaving/versions/latest')).json<VersionBody>().server?.version, '1.0.0');
    const changed = (await get(`/servers?search=io.files&updated_since=${mark}`)).json<ListBody>();
    assert.deepEqual(changed.servers!.map((v) => `${v.server!.name}@${v.server!.version}:${meta(v).status}`), ['io.files/leaving@1.0.0:active', 'io.files/leaving@2.0.0:deleted']);

    await writeFile(file, upstream([server('io.files/kept', '1.0.0'), server('io.files/leaving', '1.0.0'), server('io.files/leaving', '2.0.0', { title: 'Back' })]));
    await sync();
    const back = (await get('/servers/io.files%2Fleaving/versions/2.0.0')).json<VersionBody>();
    assert.equal(meta(back).status, 'active');
    assert.equal(meta(back).isLatest, true);
    assert.equal(back.server?.title, 'Back', 'revived with the document as it comes');
    assert.equal(meta(back).publishedAt, meta(first).publishedAt, 'its first publication time is kept');
    assert.ok(meta(back).updatedAt > mark);
  });
});

describeOnEngines('the sync writers', (engine) => {
  let store: Store;
  before(async () => {
    if (engine.skip !== null) return;
    store = await openStore(engine.databaseConfig);
    await store.sources.put(managed('internal'), 'config');
    await store.sources.put(fileSource('remote', { org: 'acme' }), 'config');
    await store.registries.put({ name: 'main', sources: ['internal', 'remote'], claims: {} }, 'config');
  });
  after(async () => {
    await store?.close();
  });
  const item = (name: string, version: string, extra: Partial<SyncItem> & { title?: string } = {}): SyncItem => {
    const { title, ...rest } = extra;
    const document = { name, version, description: 'synced', ...(title === undefined ? {} : { title }) };
    return { kind: 'server', name, version, document, digest: documentDigest(document), ...rest };
  };
  const versions = async (name: string, includeDeleted = false) =>
    (await store.entries.versionsOf('main', 'server', name, null, includeDeleted)).map((v) => `${v.version}${v.deletedAt === null ? '' : ' (deleted)'}${v.isLatest ? ' latest' : ''}`).sort();

  engine.test('applySourceChanges: items are added or replaced, removed versions become tombstones, only what is named is touched', async () => {
    assert.deepEqual(await writeSourceEntries(store.db, 'remote', { org: 'acme' }, [item('io.r/a', '1.0.0'), item('io.r/a', '1.1.0'), item('io.r/b', '1.0.0')]), { inserted: 3, updated: 0, deleted: 0 });
    const untouched = (await store.entries.getVersion('main', 'server', 'io.r/b', '1.0.0', null))!.updatedAt;
    await pause(5);
    const result = await applySourceChanges(store.db, 'remote', { org: 'acme' }, [item('io.r/a', '1.1.0', { title: 'new' }), item('io.r/c', '0.1.0')], [{ kind: 'server', name: 'io.r/a', version: '1.0.0' }, { kind: 'server', name: 'io.r/zzz', version: '1.0.0' }]);
    assert.deepEqual(result, { inserted: 1, updated: 1, deleted: 1 });
    assert.deepEqual(await versions('io.r/a', true), ['1.0.0 (deleted)', '1.1.0 latest']);
    assert.deepEqual(await versions('io.r/c'), ['0.1.0 latest']);
    assert.equal((await store.entries.getVersion('main', 'server', 'io.r/b', '1.0.0', null))!.updatedAt.getTime(), untouched.getTime(), 'an entry not named is not written');
    assert.equal(await applySourceChanges(store.db, 'nope', {}, [], []), false);
  });

  engine.test('applySourceChanges revives a removed version that comes back; a version both removed and given stays', async () => {
    assert.deepEqual(await applySourceChanges(store.db, 'remote', { org: 'acme' }, [item('io.r/a', '1.0.0')], [{ kind: 'server', name: 'io.r/a', version: '1.0.0' }]), { inserted: 1, updated: 0, deleted: 0 });
    assert.deepEqual(await versions('io.r/a'), ['1.0.0', '1.1.0 latest']);
    assert.deepEqual(await applySourceChanges(store.db, 'remote', { org: 'acme' }, [], [{ kind: 'server', name: 'io.r/a', version: '1.1.0' }]), { inserted: 0, updated: 0, deleted: 1 });
    assert.deepEqual(await versions('io.r/a', true), ['1.0.0 latest', '1.1.0 (deleted)']);
  });

  engine.test('a snapshot tombstones what left it and revives what came back; unchanged versions are not written', async () => {
    assert.deepEqual(await writeSourceEntries(store.db, 'remote', { org: 'acme' }, [item('io.r/a', '1.1.0', { title: 'new' }), item('io.r/c', '0.1.0')]), { inserted: 1, updated: 0, deleted: 2 });
    assert.deepEqual(await versions('io.r/a', true), ['1.0.0 (deleted)', '1.1.0 latest']);
    assert.deepEqual(await versions('io.r/b', true), ['1.0.0 (deleted)']);
    assert.deepEqual(await versions('io.r/b'), []);
  });

  engine.test('per-entry claims: an item\'s own claims, else the source\'s; both writers; the entry filter sees them', async () => {
    await writeSourceEntries(store.db, 'remote', { org: 'acme' }, [item('io.r/a', '1.1.0', { title: 'new' }), item('io.r/c', '0.1.0', { claims: { org: 'acme', team: 'c' } }), item('io.r/d', '1.0.0', { claims: { org: 'other' } })]);
    const claimsOf = async (name: string) => (await store.entries.getVersion('main', 'server', name, 'latest', null))?.claims;
    assert.deepEqual(await claimsOf('io.r/a'), { org: 'acme' });
    assert.deepEqual(await claimsOf('io.r/c'), { org: 'acme', team: 'c' });
    assert.deepEqual(await claimsOf('io.r/d'), { org: 'other' });
    await applySourceChanges(store.db, 'remote', { org: 'acme' }, [item('io.r/d', '1.1.0')], []);
    assert.deepEqual(await claimsOf('io.r/d'), { org: 'acme' }, 'an item without claims takes the source\'s');
    const visible = await store.entries.getVersion('main', 'server', 'io.r/c', 'latest', { pairs: ['["org","acme"]'] });
    assert.equal(visible, null, 'the entry\'s own claims filter it');
  });
});
