/**
 * Several identity providers: the token's `iss` picks the provider, whose validator then checks
 * everything (a token naming one issuer but signed by another's key is refused).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startIssuer, type TestIssuer } from './helpers/issuer.ts';
import { providersYaml, startTestRegistry, tempDir, type TestRegistry } from './helpers/registry.ts';
import { loadRegistryConfig } from '../../plugins/registry/config/registry-config.ts';

describe('auth.oauth.providers with several providers', () => {
  let a: TestIssuer;
  let b: TestIssuer;
  let stranger: TestIssuer;
  let registry: TestRegistry;
  before(async () => {
    [a, b, stranger] = await Promise.all([startIssuer('registry'), startIssuer('registry-b'), startIssuer('registry')]);
    registry = await startTestRegistry(`auth:
  mode: oauth
  oauth:
    resourceUrl: http://127.0.0.1/
    providers:
      - {name: corp, issuerUrl: "${a.url}", audience: registry}
      - {name: partners, issuerUrl: "${b.url}", audience: registry-b}
  authz:
    roles:
      manageEntries: [{role: writer}]
database: {type: memory}
`);
  });
  after(async () => {
    await registry.stop();
    await Promise.all([a.close(), b.close(), stranger.close()]);
  });

  const me = async (token: string) => registry.request('GET', '/v1/me', { token });

  it('accepts tokens of each provider, with that provider\'s audience', async () => {
    assert.deepEqual((await me(await a.token({ sub: 'alice', role: 'writer' }))).json(), { subject: 'alice', roles: ['manageEntries'] });
    assert.deepEqual((await me(await b.token({ sub: 'bob' }))).json(), { subject: 'bob', roles: [] });
  });
  it('refuses a token of the other provider\'s audience', async () => {
    assert.equal((await me(await b.token({ sub: 'bob' }, { audience: 'registry' }))).status, 401);
  });
  it('refuses a token from an issuer that is not configured', async () => {
    const res = await me(await stranger.token({ sub: 'eve' }));
    assert.equal(res.status, 401);
    assert.match(res.json().error_description ?? '', /is not one of the configured providers/);
  });
  it('refuses a token naming a configured issuer but signed by another key', async () => {
    const forged = await stranger.token({ sub: 'eve' }, { issuer: a.url });
    const res = await me(forged);
    assert.equal(res.status, 401);
    assert.equal(res.json().error, 'invalid_token');
  });
  it('refuses a token that is not a JWT (no issuer to choose a provider by)', async () => {
    assert.equal((await me('opaque-token')).status, 401);
  });
});

describe('role maps and providers', () => {
  let a: TestIssuer;
  let b: TestIssuer;
  let registry: TestRegistry;
  before(async () => {
    [a, b] = await Promise.all([startIssuer('registry'), startIssuer('registry')]);
    registry = await startTestRegistry(
      providersYaml(
        [
          { name: 'corp', issuer: a.url },
          { name: 'partners', issuer: b.url },
        ],
        `  authz:\n    roles:\n      superAdmin: [{iss: "${a.url}", role: admin}]\n      manageEntries: [{role: writer}]`,
      ),
    );
  });
  after(async () => {
    await registry.stop();
    await Promise.all([a.close(), b.close()]);
  });

  const roles = async (token: string) => (await registry.request('GET', '/v1/me', { token })).json<{ roles: string[] }>().roles;

  it('a map that names an iss grants its role to that provider\'s tokens only', async () => {
    assert.deepEqual(await roles(await a.token({ sub: 'alice', role: 'admin' })), ['superAdmin']);
    assert.deepEqual(await roles(await b.token({ sub: 'bob', role: 'admin' })), [], 'the same claim from the other provider grants nothing');
  });

  it('a map without iss applies to the tokens of every provider (the default)', async () => {
    assert.deepEqual(await roles(await a.token({ sub: 'alice', role: 'writer' })), ['manageEntries']);
    assert.deepEqual(await roles(await b.token({ sub: 'bob', role: 'writer' })), ['manageEntries']);
  });

  it('validate names a role map whose iss is not a configured provider', async () => {
    const dir = await tempDir();
    const file = join(dir, 'registry.yaml');
    await writeFile(file, `auth:
  mode: oauth
  oauth:
    resourceUrl: http://127.0.0.1/
    providers: [{name: corp, issuerUrl: "https://idp.example.com", audience: registry}]
  authz:
    roles:
      superAdmin: [{iss: "https://idp.example.com/", role: admin}]
`);
    await assert.rejects(loadRegistryConfig(file), (err: Error) => {
      assert.match(err.message, /auth\.authz\.roles\.superAdmin\[0\]\.iss: "https:\/\/idp\.example\.com\/" is not the issuerUrl of a configured provider/);
      return true;
    });
  });
});
