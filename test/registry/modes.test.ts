/**
 * The three operating modes (anonymous, auth-only, full authorization), each over real sockets on the same fixture:
 * - anonymous: every check bypassed, everything accessible, /v1/me 401;
 * - auth-only: a valid JWT required, no claims filtering (claimless entries visible too), roles
 *   neither resolved nor enforced;
 * - full authorization: the three layers (covered in depth by the authz-*.test.ts files).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAcme, type Acme } from './helpers/acme.ts';
import { namesOf, type ListBody } from './helpers/registry.ts';

const EVERY_SERVER = ['io.acme/data-pipeline@0.3.0', 'io.acme/deploy-helper@2.0.0', 'io.acme/shared-tool@1.1.0', 'io.open/free-tool@1.0.0'];

describe('anonymous mode', () => {
  let acme: Acme;
  before(async () => {
    acme = await startAcme('anonymous');
  });
  after(async () => {
    await acme.close();
  });

  it('no token needed: every registry and every entry is accessible, claimless ones included', async () => {
    for (const registry of ['acme-all', 'acme-platform', 'public']) assert.equal((await acme.registry.request('GET', `/${registry}/v0.1/servers`)).status, 200);
    const all = (await acme.registry.request('GET', '/acme-all/v0.1/servers?version=latest')).json<ListBody>();
    assert.deepEqual(namesOf(all), EVERY_SERVER);
  });
  it('publishing and admin operations need no role and no claims', async () => {
    const published = await acme.registry.request('POST', '/acme-all/v0.1/publish', { body: { name: 'io.anon/tool', version: '1.0.0', description: 'anonymous' } });
    assert.equal(published.status, 201, published.text);
    assert.equal((await acme.registry.request('GET', '/v1/sources')).json<{ sources: unknown[] }>().sources.length, 6);
    assert.equal((await acme.registry.request('PUT', '/v1/sources/scratch', { body: { managed: {}, claims: { org: 'anything' } } })).status, 201);
    assert.equal((await acme.registry.request('GET', '/v1/registries/acme-platform/entries')).status, 200);
  });
  it('/v1/me is 401: there is no identity', async () => {
    const res = await acme.registry.request('GET', '/v1/me');
    assert.equal(res.status, 401);
    assert.equal(res.json().error, 'anonymous_mode');
  });
  it('serves no protected resource metadata (there is no OAuth)', async () => {
    assert.equal((await acme.registry.request('GET', '/.well-known/oauth-protected-resource')).status, 404);
  });
});

describe('auth-only mode', () => {
  let acme: Acme;
  before(async () => {
    acme = await startAcme('authOnly');
  });
  after(async () => {
    await acme.close();
  });

  it('a valid JWT is required: 401 without one', async () => {
    assert.equal((await acme.registry.request('GET', '/acme-all/v0.1/servers')).status, 401);
    assert.equal((await acme.registry.request('GET', '/v1/me')).status, 401);
  });
  it('every authenticated caller sees every entry: no gate, no filter (claimless entries too)', async () => {
    for (const persona of ['outsider', 'dataWriter'] as const) {
      const res = await acme.registry.request('GET', '/acme-platform/v0.1/servers?version=latest', { token: acme.tokens[persona]! });
      assert.equal(res.status, 200, persona);
    }
    const all = (await acme.registry.request('GET', '/acme-all/v0.1/servers?version=latest', { token: acme.tokens.outsider! })).json<ListBody>();
    assert.deepEqual(namesOf(all), EVERY_SERVER);
  });
  it('roles are not enforced: a caller with no role publishes (without claims) and manages sources', async () => {
    const published = await acme.registry.request('POST', '/acme-all/v0.1/publish', { token: acme.tokens.reader!, body: { name: 'io.auth/tool', version: '1.0.0', description: 'x' } });
    assert.equal(published.status, 201, published.text);
    const created = await acme.registry.request('PUT', '/v1/sources/scratch', { token: acme.tokens.reader!, body: { managed: {}, claims: { org: 'not-mine' } } });
    assert.equal(created.status, 201);
  });
  it('the versions of an entry still share their claims (409 claims_mismatch)', async () => {
    const res = await acme.registry.request('POST', '/acme-all/v0.1/publish', { token: acme.tokens.reader!, body: { name: 'io.auth/tool', version: '1.1.0', description: 'x', claims: { org: 'acme' } } });
    assert.equal(res.status, 409);
    assert.equal(res.json().error, 'claims_mismatch');
  });
  it('/v1/me: the subject, and no roles (they are not resolved)', async () => {
    const res = await acme.registry.request('GET', '/v1/me', { token: acme.tokens.superAdmin! });
    assert.deepEqual(res.json(), { subject: 'root', roles: [] });
  });
});

describe('full authorization mode', () => {
  let acme: Acme;
  before(async () => {
    acme = await startAcme('full');
  });
  after(async () => {
    await acme.close();
  });

  it('the same callers are gated, filtered and role-checked', async () => {
    assert.equal((await acme.registry.request('GET', '/acme-platform/v0.1/servers', { token: acme.tokens.outsider! })).status, 403);
    const all = (await acme.registry.request('GET', '/acme-all/v0.1/servers?version=latest', { token: acme.tokens.reader! })).json<ListBody>();
    assert.deepEqual(namesOf(all), ['io.acme/deploy-helper@2.0.0', 'io.acme/shared-tool@1.1.0']);
    const published = await acme.registry.request('POST', '/acme-all/v0.1/publish', { token: acme.tokens.reader!, body: { name: 'io.auth/tool', version: '1.0.0', description: 'x', claims: { org: 'acme' } } });
    assert.equal(published.status, 403);
  });
});
