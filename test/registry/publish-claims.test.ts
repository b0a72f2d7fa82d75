/**
 * The claims of a managed source control who manages it, through a registry as through the admin
 * API: a manageEntries caller outside them can neither publish into it nor delete from it, even
 * through a registry open to everyone (403 claims_not_held, naming neither the source nor its
 * claims); superAdmin and auth-only mode bypass the check. A claims_mismatch names the entry's
 * claims only to a caller who may see the entry. On PGlite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { describeOnEngines } from './helpers/engines.ts';
import { startIssuer, type TestIssuer } from './helpers/issuer.ts';
import { oauthYaml, startTestRegistry, type Body, type TestRegistry, type VersionBody } from './helpers/registry.ts';

const PERSONAS = {
  superAdmin: { sub: 'root', role: 'super-admin' },
  platformWriter: { sub: 'pw', org: 'acme', team: ['platform'], role: 'writer' },
  dataWriter: { sub: 'dw', org: 'acme', team: 'data', role: 'writer' },
  financeWriter: { sub: 'fw', org: 'acme', team: ['finance', 'platform'], role: 'writer' },
} as const;
type Persona = keyof typeof PERSONAS;

const ROLES = `  authz:
    roles:
      superAdmin: [{role: super-admin}]
      manageEntries: [{role: writer}]
`;

const SOURCES = `sources:
  - {name: team-internal, managed: {}, claims: {org: acme, team: platform}}
  - {name: internal, managed: {}}
registries:
  - {name: open, sources: [team-internal]}
  - {name: plain, sources: [internal]}
`;

const server = (name: string, version: string, claims?: Record<string, string>) => ({ name, version, description: `${name} ${version}`, ...(claims === undefined ? {} : { claims }) });
const platform = { org: 'acme', team: 'platform' };

describeOnEngines('publishing needs the managed source\'s claims', (engine) => {
  let issuer: TestIssuer;
  let full: TestRegistry;
  let authOnly: TestRegistry;
  const tokens = {} as Record<Persona, string>;
  before(async () => {
    if (engine.skip !== null) return;
    issuer = await startIssuer('registry');
    full = await startTestRegistry(`${oauthYaml(issuer.url, 'registry', ROLES)}${SOURCES}${engine.databaseYaml}\n`);
    for (const [persona, claims] of Object.entries(PERSONAS)) tokens[persona as Persona] = await issuer.token(claims);
  });
  after(async () => {
    await full?.stop();
    await authOnly?.stop();
    await issuer?.close();
  });
  const publish = (registry: TestRegistry, persona: Persona, body: object, to = 'open') => registry.request('POST', `/${to}/v0.1/publish`, { token: tokens[persona], body });
  const del = (registry: TestRegistry, persona: Persona, path: string) => registry.request('DELETE', `/open/v0.1/${path}`, { token: tokens[persona] });

  engine.test('a writer outside the source\'s claims cannot publish into it through an open registry: 403 claims_not_held, nothing disclosed', async () => {
    const res = await publish(full, 'dataWriter', server('com.acme/sneaky', '1.0.0', { org: 'acme', team: 'data' }));
    assert.equal(res.status, 403, res.text);
    assert.equal(res.json<Body>().error, 'claims_not_held');
    assert.match(res.json<Body>().error_description ?? '', /managed source of registry "open"/);
    assert.doesNotMatch(res.json<Body>().error_description ?? '', /team-internal|platform/);
    // Refused before the body is read: an invalid body gets the same answer.
    assert.equal((await publish(full, 'dataWriter', { nonsense: true })).status, 403);
    assert.equal((await full.request('GET', '/open/v0.1/servers/com.acme%2Fsneaky/versions', { token: tokens.superAdmin })).status, 404);
  });

  engine.test('a writer holding the source\'s claims publishes; superAdmin too', async () => {
    assert.equal((await publish(full, 'platformWriter', server('com.acme/tool', '1.0.0', platform))).status, 201);
    assert.equal((await publish(full, 'superAdmin', server('com.acme/tool', '1.1.0', platform))).status, 201);
  });

  engine.test('nor can they delete from it (403, the version stays); the source\'s writers and superAdmin can', async () => {
    const res = await del(full, 'dataWriter', 'servers/com.acme%2Ftool/versions/1.0.0');
    assert.equal(res.status, 403);
    assert.equal(res.json<Body>().error, 'claims_not_held');
    assert.equal((await full.request('GET', '/open/v0.1/servers/com.acme%2Ftool/versions/1.0.0', { token: tokens.platformWriter })).status, 200);
    assert.equal((await del(full, 'platformWriter', 'servers/com.acme%2Ftool/versions/1.0.0')).status, 200);
    assert.equal((await del(full, 'superAdmin', 'servers/com.acme%2Ftool/versions/1.1.0')).status, 200);
  });

  engine.test('a claims_mismatch names the entry\'s claims only to a caller who may see the entry', async () => {
    assert.equal((await publish(full, 'superAdmin', server('com.acme/ledger', '1.0.0', { org: 'acme', team: 'finance' }), 'plain')).status, 201);
    const hidden = await publish(full, 'platformWriter', server('com.acme/ledger', '2.0.0', platform), 'plain');
    assert.equal(hidden.status, 409);
    assert.equal(hidden.json<Body>().error, 'claims_mismatch');
    assert.doesNotMatch(hidden.json<Body>().error_description ?? '', /finance/);
    const seen = await publish(full, 'financeWriter', server('com.acme/ledger', '2.0.0', platform), 'plain');
    assert.equal(seen.status, 409);
    assert.match(seen.json<Body>().error_description ?? '', /"team":"finance"/);
  });

  engine.test('auth-only mode has no claim checks: any authenticated caller publishes into a source with claims', async () => {
    // On PostgreSQL, a second server on the same database (as a replica would be).
    authOnly = await startTestRegistry(`${oauthYaml(issuer.url)}${SOURCES}${engine.databaseYaml}\n`);
    const res = await publish(authOnly, 'dataWriter', server('com.acme/open', '1.0.0'));
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json<VersionBody>().server?.name, 'com.acme/open');
  });
});
