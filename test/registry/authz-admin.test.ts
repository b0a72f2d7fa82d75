/**
 * Full authorization, admin API: claim scoping of sources and registries:
 * lists filtered, get → 404 (never 403) when the caller does not satisfy, create claims ⊆
 * caller's, update and delete need the caller to satisfy the existing claims; deleting a source
 * a registry uses is 409; config-defined resources are read-only through the API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAcme, type Acme, type Persona } from './helpers/acme.ts';

let acme: Acme;
before(async () => {
  acme = await startAcme('full');
});
after(async () => {
  await acme.close();
});

const call = (method: string, path: string, persona: Persona, body?: unknown) =>
  acme.registry.request(method, path, { token: acme.tokens[persona]!, ...(body === undefined ? {} : { body }) });
const names = (list: { name: string }[]): string[] => list.map((item) => item.name);

describe('sources', () => {
  it('list: only sources whose claims the caller satisfies (claimless ones are open)', async () => {
    const platform = (await call('GET', '/v1/sources', 'platformAdmin')).json<{ sources: { name: string }[] }>();
    assert.deepEqual(names(platform.sources), ['internal', 'open-files', 'platform-tools', 'shared', 'team-internal']);
    const outsider = (await call('GET', '/v1/sources', 'outsider')).json<{ sources: { name: string }[] }>();
    assert.deepEqual(names(outsider.sources), ['internal', 'open-files']);
  });
  it('get by name: 404 (not 403) when the caller does not satisfy the source', async () => {
    const hidden = await call('GET', '/v1/sources/data-tools', 'platformAdmin');
    assert.equal(hidden.status, 404);
    assert.equal(hidden.json().error, 'not_found');
    const visible = await call('GET', '/v1/sources/platform-tools', 'platformAdmin');
    assert.equal(visible.status, 200);
    assert.deepEqual(visible.json().claims, { org: 'acme', team: 'platform' });
  });
  it('create: the claims must be a subset of the caller\'s (201, else 403 claims_not_held)', async () => {
    const created = await call('PUT', '/v1/sources/platform-publish', 'platformAdmin', { managed: {}, claims: { org: 'acme', team: 'platform' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json().origin, 'api');
    const refused = await call('PUT', '/v1/sources/data-publish', 'platformAdmin', { managed: {}, claims: { org: 'acme', team: 'data' } });
    assert.equal(refused.status, 403);
    assert.equal(refused.json().error, 'claims_not_held');
    assert.equal((await call('PUT', '/v1/sources/data-publish', 'dataAdmin', { managed: {}, claims: { org: 'acme', team: 'data' } })).status, 201);
  });
  it('update: the caller must satisfy the existing claims (200, else 404 as for GET: no disclosure)', async () => {
    const updated = await call('PUT', '/v1/sources/platform-publish', 'platformAdmin', { managed: {}, claims: { org: 'acme' } });
    assert.equal(updated.status, 200, updated.text);
    assert.deepEqual(updated.json().claims, { org: 'acme' });
    const refused = await call('PUT', '/v1/sources/data-publish', 'platformAdmin', { managed: {}, claims: { org: 'acme' } });
    assert.equal(refused.status, 404);
    assert.equal(refused.json().error, 'not_found');
    assert.doesNotMatch(refused.text, /exists/);
    assert.deepEqual((await call('GET', '/v1/sources/data-publish', 'dataAdmin')).json().claims, { org: 'acme', team: 'data' });
  });
  it('a GET body can be PUT back unchanged (read-only fields are ignored)', async () => {
    const current = (await call('GET', '/v1/sources/platform-publish', 'platformAdmin')).json();
    assert.equal((await call('PUT', '/v1/sources/platform-publish', 'platformAdmin', current)).status, 200);
  });
  it('delete: 404 for a source the caller cannot see; 204 for one it can', async () => {
    assert.equal((await call('DELETE', '/v1/sources/data-publish', 'platformAdmin')).status, 404);
    assert.equal((await call('DELETE', '/v1/sources/data-publish', 'dataAdmin')).status, 204);
    assert.equal((await call('GET', '/v1/sources/data-publish', 'dataAdmin')).status, 404);
  });
  it('delete a source a registry uses: 409 source_in_use', async () => {
    await call('PUT', '/v1/registries/platform-reg', 'platformAdmin', { sources: ['platform-publish'], claims: { org: 'acme' } });
    const res = await call('DELETE', '/v1/sources/platform-publish', 'platformAdmin');
    assert.equal(res.status, 409);
    assert.equal(res.json().error, 'source_in_use');
    assert.deepEqual(res.json().registries, ['platform-reg']);
  });
  it('delete a source a registry the caller cannot see uses: 409, naming only the registries the caller can see', async () => {
    assert.equal((await call('PUT', '/v1/registries/data-team-reg', 'dataAdmin', { sources: ['platform-publish'], claims: { org: 'acme', team: 'data' } })).status, 201);
    const res = await call('DELETE', '/v1/sources/platform-publish', 'platformAdmin');
    assert.equal(res.status, 409);
    assert.deepEqual(res.json().registries, ['platform-reg']);
    assert.doesNotMatch(res.text, /data-team-reg/);
    assert.match(res.json().error_description ?? '', /"platform-reg" and 1 other registry/);
    assert.equal((await call('DELETE', '/v1/registries/data-team-reg', 'dataAdmin')).status, 204);
  });
  it('config-defined sources are read-only through the API: 409 config_managed', async () => {
    assert.equal((await call('DELETE', '/v1/sources/internal', 'superAdmin')).json().error, 'config_managed');
    assert.equal((await call('PUT', '/v1/sources/internal', 'superAdmin', { managed: {} })).status, 409);
  });
  it('what only the config file may define is refused through the API, naming why', async () => {
    const disk = await call('PUT', '/v1/sources/from-disk', 'superAdmin', { file: { path: '/etc/passwd' } });
    assert.equal(disk.status, 400);
    assert.match(disk.json().error_description ?? "", /sync\.fileRoot/);
    const ssh = await call('PUT', '/v1/sources/from-ssh', 'superAdmin', { git: { repository: 'git@github.com:acme/r.git', path: 'r.json' } });
    assert.equal(ssh.status, 400);
    assert.match(ssh.json().error_description ?? "", /https:\/\//);
    const secret = await call('PUT', '/v1/sources/with-secret', 'superAdmin', { git: { repository: 'https://github.com/acme/r.git', path: 'r.json', auth: { passwordSecretRef: { name: 'git', key: 'token' } } } });
    assert.equal(secret.status, 400);
    assert.match(secret.json().error_description ?? "", /secret references are not accepted/);
    const token = await call('PUT', '/v1/sources/with-token', 'superAdmin', { api: { url: 'https://registry.example.com', tokenSecretRef: { name: 'peer', key: 'token' } } });
    assert.equal(token.status, 400);
    const cluster = await call('PUT', '/v1/sources/from-cluster', 'superAdmin', { cluster: { kubernetes: {} } });
    assert.equal(cluster.status, 400);
    assert.match(cluster.json().error_description ?? "", /configuration file/);
    for (const name of ['from-disk', 'from-ssh', 'with-secret', 'with-token', 'from-cluster']) assert.equal((await call('GET', `/v1/sources/${name}`, 'superAdmin')).status, 404);
  });
  it('without manageSources: 403 on every operation', async () => {
    for (const [method, path] of [['GET', '/v1/sources'], ['GET', '/v1/sources/shared'], ['PUT', '/v1/sources/x'], ['DELETE', '/v1/sources/platform-publish']] as const) {
      const res = await call(method, path, 'platformWriter', method === 'PUT' ? { managed: {} } : undefined);
      assert.equal(res.status, 403, `${method} ${path}`);
    }
  });
  it('superAdmin manages any source, whatever its claims', async () => {
    assert.equal((await call('PUT', '/v1/sources/finance', 'superAdmin', { managed: {}, claims: { org: 'acme', team: 'finance' } })).status, 201);
    assert.equal((await call('GET', '/v1/sources/finance', 'superAdmin')).status, 200);
    assert.equal((await call('DELETE', '/v1/sources/finance', 'superAdmin')).status, 204);
  });
});

describe('registries', () => {
  it('list: only registries whose claims the caller satisfies', async () => {
    const platform = (await call('GET', '/v1/registries', 'platformAdmin')).json<{ registries: { name: string }[] }>();
    assert.deepEqual(names(platform.registries), ['acme-all', 'acme-platform', 'platform-reg', 'public', 'readonly']);
    const data = (await call('GET', '/v1/registries', 'dataAdmin')).json<{ registries: { name: string }[] }>();
    assert.deepEqual(names(data.registries), ['acme-all', 'platform-reg', 'public', 'readonly']);
  });
  it('get by name: 404 (not 403) when the caller does not satisfy the registry', async () => {
    assert.equal((await call('GET', '/v1/registries/acme-platform', 'dataAdmin')).status, 404);
    const res = await call('GET', '/v1/registries/acme-platform', 'platformAdmin');
    assert.deepEqual(res.json().sources, ['team-internal', 'shared', 'platform-tools']);
  });
  it('create: claims ⊆ caller\'s; sources must exist, be visible to the caller, and include at most one managed', async () => {
    const refused = await call('PUT', '/v1/registries/data-reg', 'platformAdmin', { sources: ['shared'], claims: { org: 'acme', team: 'data' } });
    assert.equal(refused.status, 403);
    const hidden = await call('PUT', '/v1/registries/sneaky', 'platformAdmin', { sources: ['data-tools'], claims: { org: 'acme' } });
    assert.equal(hidden.status, 400);
    assert.equal(hidden.json().error, 'unknown_source');
    const two = await call('PUT', '/v1/registries/two', 'platformAdmin', { sources: ['internal', 'team-internal'] });
    assert.equal(two.status, 400);
    assert.match(two.json().error_description ?? '', /at most one managed source/);
    const created = await call('PUT', '/v1/registries/team-reg', 'platformAdmin', { sources: ['shared', 'platform-tools'], claims: { org: 'acme', team: 'platform' } });
    assert.equal(created.status, 201, created.text);
  });
  it('update and delete need the caller to satisfy the existing claims (404 otherwise, as for GET)', async () => {
    const hidden = await call('PUT', '/v1/registries/team-reg', 'dataAdmin', { sources: ['shared'], claims: { org: 'acme' } });
    assert.equal(hidden.status, 404);
    assert.doesNotMatch(hidden.text, /exists/);
    assert.equal((await call('DELETE', '/v1/registries/team-reg', 'dataAdmin')).status, 404);
    assert.equal((await call('PUT', '/v1/registries/team-reg', 'platformAdmin', { sources: ['shared'], claims: { org: 'acme', team: 'platform' } })).status, 200);
    assert.equal((await call('DELETE', '/v1/registries/team-reg', 'platformAdmin')).status, 204);
  });
  it('a registry created through the API serves its sources to consumers at once', async () => {
    const res = await acme.registry.request('GET', '/platform-reg/v0.1/servers', { token: acme.tokens.reader! });
    assert.equal(res.status, 200);
    assert.equal((await call('DELETE', '/v1/registries/platform-reg', 'platformAdmin')).status, 204);
    assert.equal((await acme.registry.request('GET', '/platform-reg/v0.1/servers', { token: acme.tokens.reader! })).status, 404);
    assert.equal((await call('DELETE', '/v1/sources/platform-publish', 'platformAdmin')).status, 204, 'no longer used');
  });
  it('config-defined registries are read-only; without manageRegistries: 403', async () => {
    assert.equal((await call('DELETE', '/v1/registries/acme-all', 'superAdmin')).status, 409);
    assert.equal((await call('GET', '/v1/registries', 'platformWriter')).status, 403);
    assert.equal((await call('PUT', '/v1/registries/x', 'reader', { sources: [] })).status, 403);
  });
});
