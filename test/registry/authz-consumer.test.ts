/**
 * Full authorization, read side, over real sockets with tokens from a loopback OIDC issuer:
 * authentication (401s and the RFC 9728 challenge), the registry gate (layer 1: 403 before any
 * data), the entry filter (layer 2) on listings and on the raw-entries endpoints, roles via OR
 * and AND with string and array claims (/v1/me), and superAdmin everywhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAcme, type Acme, type Persona } from './helpers/acme.ts';
import { namesOf, type EntriesBody, type ListBody } from './helpers/registry.ts';

let acme: Acme;
before(async () => {
  acme = await startAcme('full');
});
after(async () => {
  await acme.close();
});

const as = (persona: Persona) => ({ token: acme.tokens[persona]! });
const get = (path: string, persona: Persona) => acme.registry.request('GET', path, as(persona));

describe('authentication', () => {
  it('no token: 401 invalid_request with a challenge pointing at the protected resource metadata', async () => {
    const res = await acme.registry.request('GET', '/acme-all/v0.1/servers');
    assert.equal(res.status, 401);
    assert.equal(res.json().error, 'invalid_request');
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm=.*resource_metadata="http:\/\/127\.0\.0\.1\/\.well-known\/oauth-protected-resource"/);
  });
  it('a bad, expired or wrong-audience token: 401 invalid_token', async () => {
    const expired = await acme.issuer!.token({ org: 'acme' }, { expiresIn: '-1h' });
    const wrongAudience = await acme.issuer!.token({ org: 'acme' }, { audience: 'someone-else' });
    for (const token of ['not-a-jwt', expired, wrongAudience]) {
      const res = await acme.registry.request('GET', '/acme-all/v0.1/servers', { token });
      assert.equal(res.status, 401, token.slice(0, 20));
      assert.equal(res.json().error, 'invalid_token');
    }
  });
  it('the protected resource metadata names the issuer (RFC 9728), without a token', async () => {
    const res = await acme.registry.request('GET', '/.well-known/oauth-protected-resource');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), { resource: 'http://127.0.0.1/', authorization_servers: [acme.issuer!.url], bearer_methods_supported: ['header'] });
  });
});

describe('layer 1: the registry gate', () => {
  it('a caller satisfying the registry claims gets 200 (string and array claims)', async () => {
    assert.equal((await get('/acme-all/v0.1/servers', 'platformWriter')).status, 200);
    assert.equal((await get('/acme-platform/v0.1/servers', 'platformWriter')).status, 200, 'team: ["platform"] satisfies team=platform');
  });
  it('a caller not satisfying them gets 403 before any data, on every consumer path', async () => {
    for (const path of ['/acme-platform/v0.1/servers', '/acme-platform/v0.1/skills', '/acme-platform/v0.1/servers/io.acme%2Fdeploy-helper/versions', '/acme-platform/v0.1/servers/io.acme%2Fdeploy-helper/versions/latest']) {
      const res = await get(path, 'dataWriter');
      assert.equal(res.status, 403, path);
      assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'error_description']);
      assert.equal(res.json().error, 'forbidden');
    }
    assert.equal((await get('/acme-all/v0.1/servers', 'outsider')).status, 403);
  });
  it('a registry without claims is open to every authenticated caller', async () => {
    assert.equal((await get('/public/v0.1/servers', 'outsider')).status, 200);
  });
  it('an unknown registry is 404', async () => {
    assert.equal((await get('/nope/v0.1/servers', 'superAdmin')).status, 404);
  });
});

describe('layer 2: the entry filter', () => {
  it('listing shows only entries whose claims the caller satisfies', async () => {
    const platform = namesOf((await get('/acme-all/v0.1/servers?version=latest', 'platformWriter')).json<ListBody>());
    assert.deepEqual(platform, ['io.acme/deploy-helper@2.0.0', 'io.acme/shared-tool@1.1.0']);
    const data = namesOf((await get('/acme-all/v0.1/servers?version=latest', 'dataWriter')).json<ListBody>());
    assert.deepEqual(data, ['io.acme/data-pipeline@0.3.0', 'io.acme/shared-tool@1.1.0']);
  });
  it('entries without claims are visible to superAdmin only', async () => {
    const all = namesOf((await get('/acme-all/v0.1/servers?version=latest', 'superAdmin')).json<ListBody>());
    assert.deepEqual(all, ['io.acme/data-pipeline@0.3.0', 'io.acme/deploy-helper@2.0.0', 'io.acme/shared-tool@1.1.0', 'io.open/free-tool@1.0.0']);
  });
  it('an entry the caller cannot see is 404 by name, like one that does not exist', async () => {
    const hidden = await get('/acme-all/v0.1/servers/io.acme%2Fdata-pipeline/versions/latest', 'platformWriter');
    assert.equal(hidden.status, 404);
    assert.equal((await get('/acme-all/v0.1/servers/io.acme%2Fdata-pipeline/versions', 'platformWriter')).status, 404);
    const seen = await get('/acme-all/v0.1/servers/io.acme%2Fdata-pipeline/versions/0.3.0', 'dataWriter');
    assert.equal(seen.status, 200);
  });
  it('the filter applies to skills too', async () => {
    const skills = (await get('/acme-all/v0.1/skills', 'reader')).json<ListBody>();
    assert.equal(skills.skills?.length, 1);
    assert.equal((await get('/public/v0.1/skills', 'outsider')).json<ListBody>().skills?.length, 0);
  });
  it('raw entries of a registry are filtered the same way (with their claims)', async () => {
    const res = await get('/v1/registries/acme-all/entries', 'platformAdmin');
    assert.equal(res.status, 200);
    const entries = res.json<EntriesBody>().entries;
    assert.deepEqual(entries.map((e) => `${e.type}:${e.name}`), ['server:io.acme/deploy-helper', 'server:io.acme/shared-tool', 'skill:io.acme/shared-skill']);
    assert.deepEqual(entries[1]!.claims, { org: 'acme' });
    assert.deepEqual(entries[1]!.versions.map((v) => [v.version, v.isLatest]), [['1.1.0', true], ['1.0.0', false]]);
  });
  it('raw entries of a source: the source must be accessible (404 otherwise)', async () => {
    assert.equal((await get('/v1/sources/data-tools/entries', 'platformAdmin')).status, 404);
    const res = await get('/v1/sources/platform-tools/entries', 'platformAdmin');
    assert.deepEqual(res.json<EntriesBody>().entries.map((e) => e.name), ['io.acme/deploy-helper']);
    assert.equal((await get('/v1/sources/open-files/entries', 'platformAdmin')).json<EntriesBody>().entries.length, 0, 'claimless entries stay hidden');
  });
  it('raw entries of a registry the caller does not satisfy: 404 (no disclosure)', async () => {
    assert.equal((await get('/v1/registries/acme-platform/entries', 'dataAdmin')).status, 404);
  });
});

describe('layer 3: roles (OR over maps, AND within a map)', () => {
  const me = async (persona: Persona) => (await get('/v1/me', persona)).json<{ subject: string; roles: string[] }>();
  it('/v1/me returns the subject and the resolved roles', async () => {
    assert.deepEqual(await me('platformAdmin'), { subject: 'pa', roles: ['manageSources', 'manageRegistries'] });
    assert.deepEqual(await me('superAdmin'), { subject: 'root', roles: ['superAdmin'] });
    assert.deepEqual(await me('reader'), { subject: 'rd', roles: [] });
  });
  it('OR: either map of manageEntries grants it; an array claim matches by any element', async () => {
    assert.deepEqual((await me('platformWriter')).roles, ['manageEntries']);
    assert.deepEqual((await me('dataWriter')).roles, ['manageEntries'], 'role: ["reader", "writer"]');
    assert.deepEqual((await me('groupPublisher')).roles, ['manageEntries'], 'groups: [..., "publishers"] and org=acme');
  });
  it('AND: a map matched only in part grants nothing', async () => {
    assert.deepEqual((await me('halfPublisher')).roles, [], 'groups matches but org does not');
  });
  it('admin listings need their role: 403 insufficient_permissions', async () => {
    for (const path of ['/v1/sources', '/v1/registries', '/v1/sources/shared', '/v1/registries/acme-all/entries']) {
      const res = await get(path, 'platformWriter');
      assert.equal(res.status, 403, path);
      assert.equal(res.json().error, 'insufficient_permissions');
    }
  });
});

describe('superAdmin', () => {
  it('passes every registry gate', async () => {
    for (const registry of ['acme-all', 'acme-platform', 'public', 'readonly']) assert.equal((await get(`/${registry}/v0.1/servers`, 'superAdmin')).status, 200, registry);
  });
  it('sees every source and registry, and every raw entry', async () => {
    const sources = (await get('/v1/sources', 'superAdmin')).json<{ sources: { name: string }[] }>().sources.map((s) => s.name);
    assert.deepEqual(sources, ['data-tools', 'internal', 'open-files', 'platform-tools', 'shared', 'team-internal']);
    const registries = (await get('/v1/registries', 'superAdmin')).json<{ registries: { name: string }[] }>().registries.map((r) => r.name);
    assert.deepEqual(registries, ['acme-all', 'acme-platform', 'public', 'readonly']);
    assert.equal((await get('/v1/sources/open-files/entries', 'superAdmin')).json<EntriesBody>().entries.length, 1);
  });
});
