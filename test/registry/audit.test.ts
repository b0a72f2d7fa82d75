/**
 * The registry server's audit trail (its top-level `audit`): each publish, delete and admin
 * change, and each refusal of one, is a record (gatehouse:registry:change, published by the API)
 * with who asked (sub, iss), from where, what it named (registry, name, version, source), and how
 * it ended; a request without a token is the trail's own `http_request` record, denied; reads are
 * not recorded; no token appears in the file.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { startAcme, type Acme, type Persona } from './helpers/acme.ts';
import { tempDir } from './helpers/registry.ts';

type Line = Record<string, unknown>;

describe('audit trail: the registry server', () => {
  let acme: Acme;
  let raw = '';
  let lines: Line[] = [];
  const server = (name: string, version: string) => ({ name, version, description: name, url: 'https://tools.example.com/mcp', claims: { org: 'acme', team: 'platform' } });

  before(async () => {
    const file = join(await tempDir('gatehouse-audit-'), 'audit.log');
    acme = await startAcme('full', `audit: {enabled: true, component: registry-test, logFile: "${file}"}\n`);
    const as = (persona: Persona) => ({ token: acme.tokens[persona]! });
    try {
      const r = acme.registry;
      assert.equal((await r.request('POST', '/acme-all/v0.1/publish', { ...as('platformWriter'), body: server('com.acme/audited', '1.0.0') })).status, 201);
      assert.equal((await r.request('POST', '/acme-all/v0.1/publish', { ...as('reader'), body: server('com.acme/refused', '1.0.0') })).status, 403);
      assert.equal((await r.request('POST', '/acme-all/v0.1/publish', { body: server('com.acme/anonymous', '1.0.0') })).status, 401);
      assert.equal((await r.request('GET', '/acme-all/v0.1/servers', as('reader'))).status, 200);
      assert.equal((await r.request('DELETE', `/acme-all/v0.1/servers/${encodeURIComponent('com.acme/audited')}/versions/1.0.0`, as('platformWriter'))).status, 200);
      const put = await r.request('PUT', '/v1/sources/audited-source', { ...as('platformAdmin'), body: { name: 'audited-source', managed: {}, claims: { org: 'acme', team: 'platform' } } });
      assert.ok(put.status === 201, put.text);
    } finally {
      await acme.close();
    }
    raw = await readFile(file, 'utf8');
    lines = raw.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);
  });

  it('records a publish with who, what and from where; a refused one with its error', () => {
    const [ok, refused] = lines.filter((l) => l.type === 'registry_publish');
    assert.equal(ok!.outcome, 'success');
    assert.equal(ok!.sub, 'pw');
    assert.equal(typeof ok!.iss, 'string');
    assert.equal(ok!.registry, 'acme-all');
    assert.equal(ok!.name, 'com.acme/audited');
    assert.equal(ok!.version, '1.0.0');
    assert.equal(ok!.clientAddress, '127.0.0.1');
    assert.equal(ok!.component, 'registry-test');
    assert.match(String(ok!.requestId), /\S/);
    assert.equal(refused!.outcome, 'denied');
    assert.equal(refused!.sub, 'rd');
    assert.equal(refused!.errorCode, 'insufficient_permissions');
  });

  it('records a delete and an admin change', () => {
    const [deleted] = lines.filter((l) => l.type === 'registry_delete');
    assert.equal(deleted!.outcome, 'success');
    assert.equal(deleted!.name, 'com.acme/audited');
    assert.equal(deleted!.version, '1.0.0');
    const [admin] = lines.filter((l) => l.type === 'registry_admin_change');
    assert.equal(admin!.outcome, 'success');
    assert.equal(admin!.sub, 'pa');
    assert.equal(admin!.action, 'PUT /v1/sources/:name');
    assert.equal(admin!.name, 'audited-source');
  });

  it('a request without a token is denied, in a record of its own; reads are not recorded', () => {
    const refused = lines.filter((l) => l.type === 'http_request');
    assert.equal(refused.length, 1, JSON.stringify(lines));
    assert.equal(refused[0]!.outcome, 'denied');
    assert.equal(refused[0]!.status, 401);
    assert.equal(refused[0]!.method, 'POST');
    assert.equal(lines.length, 5, JSON.stringify(lines.map((l) => l.type)));
  });

  it('no token appears in the file', () => {
    for (const token of Object.values(acme.tokens)) assert.equal(raw.includes(token!), false);
  });
});
