/**
 * Git sources end to end through a running registry server, against a real git server on
 * loopback (git's http-backend): the first sync at start, a new commit on demand, an unchanged
 * commit that costs one ls-refs, a broken commit that keeps the last good data, a private
 * repository with credentials from a Secret document (never shown anywhere), and what the admin
 * API may create.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGitServer, type GitServer } from '../fixtures/git-server.ts';
import { namesOf, startTestRegistry, type ListBody, type TestRegistry } from './helpers/registry.ts';

const upstream = (...names: string[]) => JSON.stringify({ data: { servers: names.map((name) => ({ name, version: '1.0.0', description: `${name} server` })) } });

interface Status {
  phase: string;
  message: string | null;
  servers: number;
  revision?: string;
  failedAttempts: number;
}

describe('git sources', () => {
  let git: GitServer;
  let registry: TestRegistry;
  let publicRepo: string;
  let privateRepo: string;
  const status = async (name: string) => (await registry.request('GET', `/v1/sources/${name}`)).json<{ status: Status }>().status;
  const sync = async (name: string) => (await registry.request('POST', `/v1/sources/${name}/sync`)).json<{ status: Status }>().status;
  const listed = async (registryName: string) => namesOf((await registry.request('GET', `/${registryName}/v0.1/servers`)).json<ListBody>());

  before(async () => {
    git = await startGitServer();
    publicRepo = await git.createRepository('catalog.git');
    await git.commit('catalog.git', 'main', 'registry/servers.json', upstream('io.acme/one', 'io.acme/two'));
    privateRepo = await git.createRepository('private.git', { credentials: { username: 'bot', password: 'hunter2-s3cret' } });
    await git.commit('private.git', 'main', 'servers.json', upstream('io.acme/secret-tool'));
    registry = await startTestRegistry(`auth: {mode: anonymous}
sources:
  - {name: catalog, git: {repository: "${publicRepo}", branch: main, path: registry/servers.json}, syncPolicy: {interval: 1h}, claims: {org: acme}}
  - name: private
    git: {repository: "${privateRepo}", branch: main, path: servers.json, auth: {username: bot, passwordSecretRef: {name: git, key: password}}}
    syncPolicy: {interval: 1h}
  - name: wrong
    git: {repository: "${privateRepo}", branch: main, path: servers.json, auth: {username: bot, passwordSecretRef: {name: git, key: wrong}}}
    syncPolicy: {interval: 1h}
registries:
  - {name: main, sources: [catalog]}
  - {name: private, sources: [private, wrong]}
database: {type: memory}
---
apiVersion: v1
kind: Secret
metadata: {name: git}
stringData: {password: hunter2-s3cret, wrong: not-the-password}
`);
  });
  after(async () => {
    await registry?.stop();
    await git?.close();
  });

  it('syncs at start: the file at the path on the branch, entries with the source\'s claims, the commit as revision', async () => {
    assert.deepEqual(await listed('main'), ['io.acme/one@1.0.0', 'io.acme/two@1.0.0']);
    const catalog = await status('catalog');
    assert.equal(catalog.phase, 'ok');
    assert.equal(catalog.revision, await git.head('catalog.git', 'main'));
    const entries = (await registry.request('GET', '/v1/sources/catalog/entries')).json<{ entries: { claims: object }[] }>();
    assert.ok(entries.entries.every((e) => JSON.stringify(e.claims) === '{"org":"acme"}'));
  });

  it('an unchanged commit costs one ls-refs and writes nothing', async () => {
    const before = git.requests.length;
    const again = await sync('catalog');
    assert.equal(again.phase, 'ok');
    const asked = git.requests.slice(before).filter((r) => r.repository === 'catalog.git').map((r) => r.command).filter((c) => c !== null);
    assert.deepEqual(asked, ['ls-refs']);
  });

  it('a new commit is synced on demand', async () => {
    const commit = await git.commit('catalog.git', 'main', 'registry/servers.json', upstream('io.acme/one', 'io.acme/three'));
    const synced = await sync('catalog');
    assert.deepEqual([synced.phase, synced.revision, synced.servers], ['ok', commit, 2]);
    assert.deepEqual(await listed('main'), ['io.acme/one@1.0.0', 'io.acme/three@1.0.0']);
  });

  it('a broken commit keeps the last good data; the status names the file and the problem', async () => {
    const good = await listed('main');
    const goodRevision = (await status('catalog')).revision;
    await git.commit('catalog.git', 'main', 'registry/servers.json', '{"data": {"servers": [');
    const failed = await sync('catalog');
    assert.equal(failed.phase, 'failed');
    assert.match(failed.message ?? '', /servers\.json/);
    assert.match(failed.message ?? '', /JSON/);
    assert.equal(failed.revision, goodRevision, 'the revision is that of the last good data');
    assert.deepEqual(await listed('main'), good);
    await git.commit('catalog.git', 'main', 'registry/servers.json', upstream('io.acme/four'));
    assert.equal((await sync('catalog')).phase, 'ok');
    assert.deepEqual(await listed('main'), ['io.acme/four@1.0.0']);
  });

  it('a private repository with credentials from a Secret; wrong credentials fail without showing them', async () => {
    assert.deepEqual(await listed('private'), ['io.acme/secret-tool@1.0.0']);
    // Its first sync may still be running on a busy machine (the registry does not wait for a failing one).
    let wrong = await status('wrong');
    for (let i = 0; i < 200 && wrong.phase === 'syncing'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      wrong = await status('wrong');
    }
    assert.equal(wrong.phase, 'failed');
    assert.match(wrong.message ?? '', /auth/i);
    const everything = JSON.stringify([(await registry.request('GET', '/v1/sources')).json(), (await registry.request('GET', '/metrics')).text]);
    assert.doesNotMatch(everything, /hunter2|not-the-password/);
    const shown = (await registry.request('GET', '/v1/sources/private')).json<{ git: { auth: unknown } }>();
    assert.deepEqual(shown.git.auth, { username: 'bot', passwordSecretRef: { name: 'git', key: 'password' } }, 'the reference is shown, not the value');
  });

  it('through the admin API: https repositories on public addresses only (unless the config allows private ones)', async () => {
    const plain = await registry.request('PUT', '/v1/sources/from-api', { body: { git: { repository: publicRepo, path: 'registry/servers.json' } } });
    assert.equal(plain.status, 201, plain.text);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await sync('from-api');
    assert.equal(refused.phase, 'failed');
    assert.match(refused.message ?? '', /https|not allowed|protocol/i);
    const before = git.requests.length;
    const local = await registry.request('PUT', '/v1/sources/from-api', { body: { git: { repository: publicRepo.replace('http://', 'https://'), path: 'registry/servers.json' } } });
    assert.equal(local.status, 200, local.text);
    const loopback = await sync('from-api');
    assert.equal(loopback.phase, 'failed');
    assert.match(loopback.message ?? '', /loopback address.*sync\.allowPrivateAddresses/);
    assert.equal(git.requests.length, before, 'nothing reached the git server');
  });
});

describe('a git source changed through the admin API', () => {
  let git: GitServer;
  let registry: TestRegistry;

  before(async () => {
    git = await startGitServer();
    await git.createRepository('two-files.git');
    await git.commit('two-files.git', 'main', 'a.json', upstream('io.acme/from-a'));
    await git.commit('two-files.git', 'main', 'b.json', upstream('io.acme/from-b-1', 'io.acme/from-b-2'));
    registry = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
sync: {allowPrivateAddresses: true}
database: {type: memory}
`);
  });
  after(async () => {
    await registry?.stop();
    await git?.close();
  });

  it('a new path in the same commit is read in full, not taken as unchanged', async () => {
    const repository = `${git.url}/two-files.git`;
    const put = (path: string) => registry.request('PUT', '/v1/sources/team', { body: { git: { repository, branch: 'main', path }, syncPolicy: { interval: '1h' } } });
    assert.equal((await put('a.json')).status, 201);
    const synced = async (servers: number) => {
      for (let i = 0; i < 100; i++) {
        const status = (await registry.request('GET', '/v1/sources/team')).json<{ status: Status }>().status;
        if (status.phase === 'ok' && status.servers === servers) return status;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.fail(`the source never held ${servers} servers`);
    };
    const first = await synced(1);
    assert.equal((await put('b.json')).status, 200);
    const second = await synced(2);
    assert.equal(second.revision, first.revision, 'same commit, another file');
    const entries = (await registry.request('GET', '/v1/sources/team/entries')).json<{ entries: { name: string }[] }>();
    assert.deepEqual(entries.entries.map((e) => e.name), ['io.acme/from-b-1', 'io.acme/from-b-2']);
  });
});
