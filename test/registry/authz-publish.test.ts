/**
 * Full authorization, write side: publishing needs manageEntries (or superAdmin) and a registry
 * with a managed source; publish claims must be a subset of the publisher's JWT (403); every
 * later version carries the first version's claims (409); a duplicate version is 409; a
 * claimless publish is 400 claims_required; concurrent publishes of one version give one 201
 * and one 409; published entries are filtered like any other; deleting needs the role and
 * visibility.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAcme, type Acme, type Persona } from './helpers/acme.ts';
import { namesOf, type ListBody, type VersionBody } from './helpers/registry.ts';

let acme: Acme;
before(async () => {
  acme = await startAcme('full');
});
after(async () => {
  await acme.close();
});

const publish = (registry: string, persona: Persona, body: Record<string, unknown>) =>
  acme.registry.request('POST', `/${registry}/v0.1/publish`, { token: acme.tokens[persona]!, body });
const server = (name: string, version: string, claims?: Record<string, string>) => ({
  name,
  version,
  description: `${name} ${version}`,
  url: 'https://tools.example.com/mcp',
  ...(claims === undefined ? {} : { claims }),
});
const platform = { org: 'acme', team: 'platform' };

describe('who may publish', () => {
  it('manageEntries via {role: writer} with an array team claim: 201, official v0.1 body, Location', async () => {
    const res = await publish('acme-all', 'platformWriter', server('com.acme/linter', '1.0.0', platform));
    assert.equal(res.status, 201, res.text);
    const body = res.json<VersionBody>();
    assert.equal(body.server?.name, 'com.acme/linter');
    assert.deepEqual(body.server?.remotes, [{ type: 'streamable-http', url: 'https://tools.example.com/mcp' }]);
    assert.equal(body.server?.claims, undefined, 'claims are registry data, not part of server.json');
    assert.equal(body._meta['io.modelcontextprotocol.registry/official'].isLatest, true);
    assert.equal(res.headers.get('location'), '/acme-all/v0.1/servers/com.acme%2Flinter/versions/1.0.0');
  });
  it('manageEntries via the AND map {groups: publishers, org: acme}: 201', async () => {
    assert.equal((await publish('acme-all', 'groupPublisher', server('com.acme/grouped', '1.0.0', platform))).status, 201);
  });
  it('no manageEntries role: 403 insufficient_permissions (also when a map matches only in part)', async () => {
    for (const [persona, registry] of [['reader', 'acme-all'], ['platformAdmin', 'acme-all'], ['halfPublisher', 'public']] as const) {
      const res = await publish(registry, persona, server('com.acme/nope', '1.0.0', { org: 'acme' }));
      assert.equal(res.status, 403, persona);
      assert.equal(res.json().error, 'insufficient_permissions');
    }
  });
  it('the registry gate comes first: 403 forbidden for a registry the publisher does not satisfy', async () => {
    const res = await publish('acme-platform', 'dataWriter', server('com.acme/data-thing', '1.0.0', { org: 'acme' }));
    assert.equal(res.status, 403);
    assert.equal(res.json().error, 'forbidden');
  });
  it('a registry without a managed source: 403 not_publishable', async () => {
    const res = await publish('readonly', 'superAdmin', server('com.acme/ro', '1.0.0', { org: 'acme' }));
    assert.equal(res.status, 403);
    assert.equal(res.json().error, 'not_publishable');
  });
});

describe('the claims rules of publishing', () => {
  it('claims not held by the publisher: 403 claims_not_held', async () => {
    const res = await publish('acme-all', 'platformWriter', server('com.acme/finance', '1.0.0', { org: 'acme', team: 'finance' }));
    assert.equal(res.status, 403);
    assert.equal(res.json().error, 'claims_not_held');
  });
  it('no claims under full authorization: 400 claims_required', async () => {
    const res = await publish('acme-all', 'platformWriter', server('com.acme/claimless', '1.0.0'));
    assert.equal(res.status, 400);
    assert.equal(res.json().error, 'claims_required');
    const empty = await publish('acme-all', 'platformWriter', server('com.acme/claimless', '1.0.0', {}));
    assert.equal(empty.json().error, 'claims_required');
  });
  it('a later version with other claims: 409 claims_mismatch; with the same claims: 201', async () => {
    const res = await publish('acme-all', 'platformWriter', server('com.acme/linter', '1.1.0', { org: 'acme' }));
    assert.equal(res.status, 409);
    assert.equal(res.json().error, 'claims_mismatch');
    assert.equal((await publish('acme-all', 'platformWriter', server('com.acme/linter', '1.1.0', platform))).status, 201);
  });
  it('a duplicate version: 409 version_exists', async () => {
    const res = await publish('acme-all', 'platformWriter', server('com.acme/linter', '1.0.0', platform));
    assert.equal(res.status, 409);
    assert.equal(res.json().error, 'version_exists');
  });
  it('two concurrent publishes of one version: one 201, one 409', async () => {
    const [a, b] = await Promise.all([
      publish('acme-all', 'platformWriter', server('com.acme/race', '1.0.0', platform)),
      publish('acme-all', 'groupPublisher', server('com.acme/race', '1.0.0', platform)),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [201, 409]);
  });
  it('superAdmin publishes without claim validation (claimless, or claims it does not hold)', async () => {
    assert.equal((await publish('acme-all', 'superAdmin', server('com.acme/admin-claimless', '1.0.0'))).status, 201);
    assert.equal((await publish('acme-all', 'superAdmin', server('com.acme/admin-finance', '1.0.0', { org: 'acme', team: 'finance' }))).status, 201);
  });
});

describe('published entries are filtered like any other', () => {
  const latest = async (persona: Persona) => namesOf((await acme.registry.request('GET', '/acme-all/v0.1/servers?version=latest&search=com.acme', { token: acme.tokens[persona]! })).json<ListBody>());
  it('visible to callers holding their claims, hidden from others; claimless ones only to superAdmin', async () => {
    assert.deepEqual(await latest('platformWriter'), ['com.acme/grouped@1.0.0', 'com.acme/linter@1.1.0', 'com.acme/race@1.0.0']);
    assert.deepEqual(await latest('dataWriter'), []);
    assert.deepEqual(await latest('superAdmin'), ['com.acme/admin-claimless@1.0.0', 'com.acme/admin-finance@1.0.0', 'com.acme/grouped@1.0.0', 'com.acme/linter@1.1.0', 'com.acme/race@1.0.0']);
  });
  it('the same managed source serves every registry listing it (subject to each gate)', async () => {
    const res = await acme.registry.request('GET', '/public/v0.1/servers/com.acme%2Flinter/versions/latest', { token: acme.tokens.reader! });
    assert.equal(res.status, 200);
    assert.equal(res.json<VersionBody>().server?.version, '1.1.0');
  });
});

describe('deleting a version', () => {
  const del = (persona: Persona, name: string, version: string) =>
    acme.registry.request('DELETE', `/acme-all/v0.1/servers/${encodeURIComponent(name)}/versions/${version}`, { token: acme.tokens[persona]! });
  it('needs manageEntries: 403', async () => {
    assert.equal((await del('reader', 'com.acme/linter', '1.1.0')).status, 403);
  });
  it('an entry the caller cannot see is 404 (not deleted)', async () => {
    assert.equal((await del('dataWriter', 'com.acme/linter', '1.1.0')).status, 404);
  });
  it('the publisher deletes it: 200 with status deleted; "latest" moves back; again: 404', async () => {
    const res = await del('platformWriter', 'com.acme/linter', '1.1.0');
    assert.equal(res.status, 200);
    assert.equal(res.json<VersionBody>()._meta['io.modelcontextprotocol.registry/official'].status, 'deleted');
    const latest = await acme.registry.request('GET', '/acme-all/v0.1/servers/com.acme%2Flinter/versions/latest', { token: acme.tokens.platformWriter! });
    assert.equal(latest.json<VersionBody>().server?.version, '1.0.0');
    assert.equal((await del('platformWriter', 'com.acme/linter', '1.1.0')).status, 404);
  });
  it('superAdmin deletes anyone\'s entry', async () => {
    assert.equal((await del('superAdmin', 'com.acme/grouped', '1.0.0')).status, 200);
  });
  it('entries of synced sources are not deletable through a registry (404: not in its managed source)', async () => {
    assert.equal((await del('superAdmin', 'io.acme/shared-tool', '1.0.0')).status, 404);
  });
});

describe('skills', () => {
  it('are published with "type": "skill" and listed at /v0.1/skills', async () => {
    const res = await publish('acme-all', 'platformWriter', { type: 'skill', ...server('com.acme/review-skill', '0.1.0', platform) });
    assert.equal(res.status, 201, res.text);
    // One shape for published and synced skills: {namespace, name} (test/registry/skill-shape.test.ts).
    assert.deepEqual([res.json<VersionBody>().skill?.namespace, res.json<VersionBody>().skill?.name], ['com.acme', 'review-skill']);
    assert.equal(res.json<VersionBody>().skill?.remotes, undefined);
    const skills = (await acme.registry.request('GET', '/acme-all/v0.1/skills', { token: acme.tokens.platformWriter! })).json<ListBody>();
    assert.deepEqual(skills.skills?.map((s) => `${String(s.skill?.namespace)}/${s.skill?.name}`), ['com.acme/review-skill', 'io.acme/shared-skill']);
    const servers = (await acme.registry.request('GET', '/acme-all/v0.1/servers?search=review', { token: acme.tokens.platformWriter! })).json<ListBody>();
    assert.equal(servers.servers?.length, 0);
    const del = await acme.registry.request('DELETE', '/acme-all/v0.1/skills/com.acme%2Freview-skill/versions/0.1.0', { token: acme.tokens.platformWriter! });
    assert.equal(del.status, 200);
  });
});
