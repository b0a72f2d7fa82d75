/**
 * `GET /openapi.json`: public (no token, cross-origin readable), a valid OpenAPI 3.1 document,
 * and accurate: every operation it documents is answered by the server with a status it
 * documents, and the body validates (ajv) against the schema it gives for that status, for
 * servers, skills, tombstones and errors, and for the admin API (`/v1/...`: sources, registries,
 * entries, syncs, the caller's identity; 401 and 403 included) against a second server under
 * full authorization; the bodies sent to the admin API validate against its request schemas.
 * Complete: every route the servers register (their plugins' routes, and the probes and
 * `/metrics` the server answers itself) is in the document with its method.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startIssuer, type TestIssuer } from './helpers/issuer.ts';
import { oauthYaml, startTestRegistry, tempDir, type Response, type TestRegistry } from './helpers/registry.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Json = Record<string, any>;

let issuer: TestIssuer;
let registry: TestRegistry;
/** The same API under full authorization (roles), for the admin API's 403s and identities. */
let admin: TestRegistry;
let token: string;
/** A superAdmin's token on `admin`, and one that holds no role there. */
let adminToken: string;
let nobodyToken: string;
let doc: Json;
let ajv: Ajv2020;

before(async () => {
  issuer = await startIssuer('registry');
  registry = await startTestRegistry(`${oauthYaml(issuer.url)}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
database: {type: memory}
`);
  const dir = await tempDir();
  await writeFile(join(dir, 'catalog.json'), JSON.stringify({ data: { servers: [server('io.acme/catalogued', '1.0.0')], skills: [{ namespace: 'io.acme', name: 'catalogued-skill', version: '1.0.0', description: 'A skill' }] } }));
  admin = await startTestRegistry(
    `${oauthYaml(issuer.url, 'registry', '  authz:\n    roles:\n      superAdmin: [{role: admin}]\n')}
sources:
  - {name: internal, managed: {}}
  - {name: catalog, format: upstream, file: {path: ./catalog.json}}
registries: [{name: main, sources: [internal, catalog]}]
server: {maxBodySize: 4Ki}
database: {type: memory}
`,
    dir,
  );
  token = await issuer.token({ sub: 'publisher' });
  adminToken = await issuer.token({ sub: 'admin', role: 'admin' });
  nobodyToken = await issuer.token({ sub: 'nobody' });
  const res = await registry.request('GET', '/openapi.json');
  doc = res.json<Json>();
  ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'https://gatehouse.test/openapi.json', components: doc.components });
});
after(async () => {
  await admin?.stop();
  await registry.stop();
  await issuer.close();
});

/** Operations exercised, `METHOD /template`, to check that every documented one is. */
const exercised = new Set<string>();

/** Asserts that the documented operation answers `res` with a documented status and a body of the documented schema. */
function conforms(method: string, template: string, res: Response): void {
  const operation = doc.paths[template]?.[method.toLowerCase()];
  assert.ok(operation !== undefined, `${method} ${template} is documented`);
  exercised.add(`${method} ${template}`);
  const documented = operation.responses[String(res.status)];
  assert.ok(documented !== undefined, `${method} ${template} documents ${res.status} (${res.text.slice(0, 200)})`);
  const schema = documented.content?.['application/json']?.schema;
  if (schema === undefined) return;
  const validate = ajv.compile({ $id: `https://gatehouse.test/check/${exercised.size}/${res.status}/${Math.random()}`, ...resolveLocal(schema) });
  assert.ok(validate(res.json()), `${method} ${template} ${res.status}: ${ajv.errorsText(validate.errors)}\n${res.text.slice(0, 500)}`);
}

/** Asserts that `body`, sent to the documented operation, validates against its request schema. */
function accepted(method: string, template: string, body: unknown): void {
  const schema = doc.paths[template]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.schema;
  assert.ok(schema !== undefined, `${method} ${template} documents its request body`);
  const validate = ajv.compile({ $id: `https://gatehouse.test/request/${Math.random()}`, ...resolveLocal(schema) });
  assert.ok(validate(body), `${method} ${template} request: ${ajv.errorsText(validate.errors)}`);
}

/** References to the document's components, made absolute (the schema is compiled on its own). */
function resolveLocal(schema: Json): Json {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"https://gatehouse.test/openapi.json#/components/'));
}

const auth = () => ({ token });
const server = (name: string, version: string) => ({ name, version, description: `${name} ${version}`, url: 'https://tools.example.com/mcp' });

describe('GET /openapi.json', () => {
  it('is public: no token needed, readable from any origin, cacheable', async () => {
    const res = await registry.request('GET', '/openapi.json', { headers: { origin: 'https://elsewhere.example.com' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('cache-control') ?? '', /public/);
    assert.equal((await registry.request('GET', '/main/v0.1/servers')).status, 401, 'the API itself still needs a token');
  });
  it('is a valid OpenAPI 3.1 document, naming the official server.json schema it holds documents to', async () => {
    const result = await new Validator().validate(structuredClone(doc));
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    assert.equal(doc.openapi, '3.1.0');
    assert.match(doc.info.description, /2025-12-11/);
    assert.ok(doc.components.schemas.ServerDetail.properties.description.maxLength === 100);
  });
  it('its schemas refuse what the server must never send (the check below has teeth)', () => {
    const validate = ajv.compile({ $id: 'https://gatehouse.test/control', ...resolveLocal({ $ref: '#/components/schemas/ServerResponse' }) });
    const good = { server: { name: 'io.x/y', version: '1.0.0', description: 'y' }, _meta: { 'io.modelcontextprotocol.registry/official': { status: 'active', publishedAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z', isLatest: true } } };
    assert.ok(validate(good), ajv.errorsText(validate.errors));
    assert.ok(!validate({ ...good, server: { ...good.server, description: 'd'.repeat(101) } }));
    assert.ok(!validate({ ...good, _meta: { 'io.modelcontextprotocol.registry/official': { status: 'gone' } } }));
    assert.ok(!validate({ skill: good.server }));
  });
});

describe('real responses validate against the document', () => {
  it('publish: 201 for a server and a skill; 400, 409 and 401 errors', async () => {
    conforms('POST', '/{registry}/v0.1/publish', await registry.request('POST', '/main/v0.1/publish', { ...auth(), body: server('io.acme/doc', '1.0.0') }));
    conforms('POST', '/{registry}/v0.1/publish', await registry.request('POST', '/main/v0.1/publish', { ...auth(), body: server('io.acme/doc', '1.1.0') }));
    conforms('POST', '/{registry}/v0.1/publish', await registry.request('POST', '/main/v0.1/publish', { ...auth(), body: { type: 'skill', ...server('io.acme/skill', '1.0.0') } }));
    const invalid = await registry.request('POST', '/main/v0.1/publish', { ...auth(), body: { ...server('io.acme/doc', '2.0.0'), description: 'd'.repeat(150) } });
    assert.equal(invalid.status, 400);
    conforms('POST', '/{registry}/v0.1/publish', invalid);
    const again = await registry.request('POST', '/main/v0.1/publish', { ...auth(), body: server('io.acme/doc', '1.0.0') });
    assert.equal(again.status, 409);
    conforms('POST', '/{registry}/v0.1/publish', again);
    conforms('POST', '/{registry}/v0.1/publish', await registry.request('POST', '/main/v0.1/publish', { body: server('io.acme/doc', '3.0.0') }));
    conforms('POST', '/{registry}/v0.1/publish', await registry.request('POST', '/main/v0.1/publish', { ...auth(), raw: '{}', headers: { 'content-type': 'text/plain' } }));
  });
  it('servers: the list, the versions, one version, latest; 404 and 400 errors', async () => {
    conforms('GET', '/{registry}/v0.1/servers', await registry.request('GET', '/main/v0.1/servers?limit=1', auth()));
    conforms('GET', '/{registry}/v0.1/servers', await registry.request('GET', '/main/v0.1/servers?limit=0', auth()));
    conforms('GET', '/{registry}/v0.1/servers', await registry.request('GET', '/nope/v0.1/servers', auth()));
    conforms('GET', '/{registry}/v0.1/servers/{serverName}/versions', await registry.request('GET', '/main/v0.1/servers/io.acme%2Fdoc/versions', auth()));
    conforms('GET', '/{registry}/v0.1/servers/{serverName}/versions', await registry.request('GET', '/main/v0.1/servers/io.acme%2Fnone/versions', auth()));
    conforms('GET', '/{registry}/v0.1/servers/{serverName}/versions/{version}', await registry.request('GET', '/main/v0.1/servers/io.acme%2Fdoc/versions/latest', auth()));
    conforms('GET', '/{registry}/v0.1/servers/{serverName}/versions/{version}', await registry.request('GET', '/main/v0.1/servers/io.acme%2Fdoc/versions/9.9.9', auth()));
  });
  it('deleting: the tombstone, and tombstones in the lists (include_deleted, updated_since)', async () => {
    const deleted = await registry.request('DELETE', '/main/v0.1/servers/io.acme%2Fdoc/versions/1.1.0', auth());
    assert.equal(deleted.json<Json>()._meta['io.modelcontextprotocol.registry/official'].status, 'deleted');
    conforms('DELETE', '/{registry}/v0.1/servers/{serverName}/versions/{version}', deleted);
    conforms('DELETE', '/{registry}/v0.1/servers/{serverName}/versions/{version}', await registry.request('DELETE', '/main/v0.1/servers/io.acme%2Fdoc/versions/1.1.0', auth()));
    const all = await registry.request('GET', '/main/v0.1/servers?include_deleted=true', auth());
    assert.equal(all.json<Json>().servers.length, 2);
    conforms('GET', '/{registry}/v0.1/servers', all);
    conforms('GET', '/{registry}/v0.1/servers', await registry.request('GET', '/main/v0.1/servers?updated_since=2020-01-01T00:00:00Z', auth()));
    conforms('GET', '/{registry}/v0.1/servers/{serverName}/versions/{version}', await registry.request('GET', '/main/v0.1/servers/io.acme%2Fdoc/versions/1.1.0?include_deleted=true', auth()));
  });
  it('skills: the same shapes under skill and skills', async () => {
    conforms('GET', '/{registry}/v0.1/skills', await registry.request('GET', '/main/v0.1/skills', auth()));
    conforms('GET', '/{registry}/v0.1/skills/{skillName}/versions', await registry.request('GET', '/main/v0.1/skills/io.acme%2Fskill/versions', auth()));
    conforms('GET', '/{registry}/v0.1/skills/{skillName}/versions/{version}', await registry.request('GET', '/main/v0.1/skills/io.acme%2Fskill/versions/1.0.0', auth()));
    conforms('DELETE', '/{registry}/v0.1/skills/{skillName}/versions/{version}', await registry.request('DELETE', '/main/v0.1/skills/io.acme%2Fskill/versions/1.0.0', auth()));
  });
  it('the document itself', async () => {
    conforms('GET', '/openapi.json', await registry.request('GET', '/openapi.json'));
    conforms('OPTIONS', '/openapi.json', await registry.request('OPTIONS', '/openapi.json', { headers: { origin: 'https://elsewhere.example.com', 'access-control-request-method': 'GET' } }));
  });
});

describe('the admin API validates against the document', () => {
  const as = (who: 'admin' | 'nobody' | 'none') => (who === 'none' ? {} : { token: who === 'admin' ? adminToken : nobodyToken });
  const put = async (template: string, path: string, body: unknown, who: 'admin' | 'nobody' = 'admin'): Promise<Response> => {
    accepted('PUT', template, body);
    const res = await admin.request('PUT', path, { ...as(who), body });
    conforms('PUT', template, res);
    return res;
  };

  it('sources: list, get (managed and synced, with its status), 401 and 403', async () => {
    const list = await admin.request('GET', '/v1/sources', as('admin'));
    assert.deepEqual(list.json<Json>().sources.map((s: Json) => s.name).sort(), ['catalog', 'internal']);
    conforms('GET', '/v1/sources', list);
    const none = await admin.request('GET', '/v1/sources', as('none'));
    assert.equal(none.status, 401);
    conforms('GET', '/v1/sources', none);
    const nobody = await admin.request('GET', '/v1/sources', as('nobody'));
    assert.equal(nobody.json<Json>().error, 'insufficient_permissions');
    conforms('GET', '/v1/sources', nobody);
    const synced = await admin.request('GET', '/v1/sources/catalog', as('admin'));
    assert.equal(synced.json<Json>().status.phase, 'ok');
    conforms('GET', '/v1/sources/{name}', synced);
    conforms('GET', '/v1/sources/{name}', await admin.request('GET', '/v1/sources/internal', as('admin')));
    conforms('GET', '/v1/sources/{name}', await admin.request('GET', '/v1/sources/none', as('admin')));
    conforms('GET', '/v1/sources/{name}', await admin.request('GET', '/v1/sources/internal', as('nobody')));
  });
  it('sources: create, update, a GET body put back, and every refusal (400, 403, 409, 413, 415)', async () => {
    assert.equal((await put('/v1/sources/{name}', '/v1/sources/extra', { managed: {}, claims: { team: 'a' } })).status, 201);
    assert.equal((await put('/v1/sources/{name}', '/v1/sources/extra', { name: 'extra', managed: {} })).status, 200);
    const current = (await admin.request('GET', '/v1/sources/extra', as('admin'))).json<Json>();
    assert.equal((await put('/v1/sources/{name}', '/v1/sources/extra', current)).status, 200);
    assert.equal((await put('/v1/sources/{name}', '/v1/sources/peer', { api: { url: 'http://127.0.0.1:9/registry' }, syncPolicy: { interval: '1h' } })).status, 201);
    const invalid = await admin.request('PUT', '/v1/sources/extra', { ...as('admin'), body: { managed: {}, file: { path: '/x' } } });
    assert.equal(invalid.status, 400);
    conforms('PUT', '/v1/sources/{name}', invalid);
    const configured = await put('/v1/sources/{name}', '/v1/sources/catalog', { managed: {} });
    assert.equal(configured.json<Json>().error, 'config_managed');
    assert.equal((await put('/v1/sources/{name}', '/v1/sources/other', { managed: {} }, 'nobody')).status, 403);
    conforms('PUT', '/v1/sources/{name}', await admin.request('PUT', '/v1/sources/extra', { ...as('none'), body: { managed: {} } }));
    conforms('PUT', '/v1/sources/{name}', await admin.request('PUT', '/v1/sources/extra', { ...as('admin'), raw: '{}', headers: { 'content-type': 'text/plain' } }));
    const huge = await admin.request('PUT', '/v1/sources/extra', { ...as('admin'), raw: JSON.stringify({ managed: {}, claims: { big: 'x'.repeat(5000) } }), headers: { 'content-type': 'application/json' } });
    assert.equal(huge.status, 413);
    conforms('PUT', '/v1/sources/{name}', huge);
  });
  it('sources: entries, sync (200, the failed sync of an unreachable peer, 409 for a managed source), 400 and 404', async () => {
    const entries = await admin.request('GET', '/v1/sources/catalog/entries', as('admin'));
    assert.deepEqual(entries.json<Json>().entries.map((e: Json) => `${e.type}:${e.name}`), ['server:io.acme/catalogued', 'skill:io.acme/catalogued-skill']);
    conforms('GET', '/v1/sources/{name}/entries', entries);
    conforms('GET', '/v1/sources/{name}/entries', await admin.request('GET', '/v1/sources/catalog/entries?limit=0', as('admin')));
    conforms('GET', '/v1/sources/{name}/entries', await admin.request('GET', '/v1/sources/none/entries', as('admin')));
    conforms('POST', '/v1/sources/{name}/sync', await admin.request('POST', '/v1/sources/catalog/sync', as('admin')));
    const failed = await admin.request('POST', '/v1/sources/peer/sync', as('admin'));
    assert.equal(failed.json<Json>().status.phase, 'failed', failed.text);
    conforms('POST', '/v1/sources/{name}/sync', failed);
    const managed = await admin.request('POST', '/v1/sources/internal/sync', as('admin'));
    assert.equal(managed.json<Json>().error, 'not_synced');
    conforms('POST', '/v1/sources/{name}/sync', managed);
    conforms('POST', '/v1/sources/{name}/sync', await admin.request('POST', '/v1/sources/catalog/sync', as('nobody')));
  });
  it('registries: list, get, create, update, entries, and the refusals', async () => {
    conforms('GET', '/v1/registries', await admin.request('GET', '/v1/registries', as('admin')));
    conforms('GET', '/v1/registries', await admin.request('GET', '/v1/registries', as('nobody')));
    conforms('GET', '/v1/registries/{name}', await admin.request('GET', '/v1/registries/main', as('admin')));
    conforms('GET', '/v1/registries/{name}', await admin.request('GET', '/v1/registries/none', as('admin')));
    assert.equal((await put('/v1/registries/{name}', '/v1/registries/extra', { sources: ['extra', 'catalog'], claims: { team: 'a' } })).status, 201);
    assert.equal((await put('/v1/registries/{name}', '/v1/registries/extra', { name: 'extra', sources: ['extra'] })).status, 200);
    const current = (await admin.request('GET', '/v1/registries/extra', as('admin'))).json<Json>();
    assert.equal((await put('/v1/registries/{name}', '/v1/registries/extra', current)).status, 200);
    assert.equal((await put('/v1/registries/{name}', '/v1/registries/extra', { sources: ['nowhere'] })).json<Json>().error, 'unknown_source');
    assert.equal((await put('/v1/registries/{name}', '/v1/registries/main', { sources: ['internal'] })).json<Json>().error, 'config_managed');
    const entries = await admin.request('GET', '/v1/registries/main/entries?limit=1', as('admin'));
    assert.ok(entries.json<Json>().metadata.nextCursor !== undefined);
    conforms('GET', '/v1/registries/{name}/entries', entries);
    conforms('GET', '/v1/registries/{name}/entries', await admin.request('GET', `/v1/registries/main/entries?cursor=${encodeURIComponent(entries.json<Json>().metadata.nextCursor)}`, as('admin')));
    conforms('GET', '/v1/registries/{name}/entries', await admin.request('GET', '/v1/registries/main/entries?limit=501', as('admin')));
  });
  it('deleting: 409 for a configured or a used source, 204, then 404', async () => {
    const used = await admin.request('DELETE', '/v1/sources/extra', as('admin'));
    assert.equal(used.json<Json>().error, 'source_in_use');
    conforms('DELETE', '/v1/sources/{name}', used);
    conforms('DELETE', '/v1/registries/{name}', await admin.request('DELETE', '/v1/registries/main', as('admin')));
    conforms('DELETE', '/v1/registries/{name}', await admin.request('DELETE', '/v1/registries/extra', as('admin')));
    conforms('DELETE', '/v1/registries/{name}', await admin.request('DELETE', '/v1/registries/extra', as('admin')));
    conforms('DELETE', '/v1/sources/{name}', await admin.request('DELETE', '/v1/sources/extra', as('admin')));
    conforms('DELETE', '/v1/sources/{name}', await admin.request('DELETE', '/v1/sources/extra', as('admin')));
    conforms('DELETE', '/v1/sources/{name}', await admin.request('DELETE', '/v1/sources/catalog', as('admin')));
    conforms('DELETE', '/v1/sources/{name}', await admin.request('DELETE', '/v1/sources/peer', as('nobody')));
  });
  it('/v1/me: the caller and its roles; 401 without a token', async () => {
    const me = await admin.request('GET', '/v1/me', as('admin'));
    assert.deepEqual(me.json(), { subject: 'admin', roles: ['superAdmin'] });
    conforms('GET', '/v1/me', me);
    conforms('GET', '/v1/me', await registry.request('GET', '/v1/me', auth()));
    conforms('GET', '/v1/me', await admin.request('GET', '/v1/me', as('none')));
  });
  it('the protected resource metadata (at both paths), the probes and /metrics', async () => {
    const metadata = await admin.request('GET', '/.well-known/oauth-protected-resource');
    conforms('GET', '/.well-known/oauth-protected-resource', metadata);
    const suffixed = await admin.request('GET', '/.well-known/oauth-protected-resource/registry');
    assert.equal(suffixed.text, metadata.text, 'the path RFC 9728 derives from the resource URL serves the same document');
    conforms('OPTIONS', '/.well-known/oauth-protected-resource', await admin.request('OPTIONS', '/.well-known/oauth-protected-resource', { headers: { origin: 'https://elsewhere.example.com', 'access-control-request-method': 'GET' } }));
    conforms('GET', '/healthz', await admin.request('GET', '/healthz'));
    conforms('GET', '/readyz', await admin.request('GET', '/readyz'));
    const metrics = await admin.request('GET', '/metrics', as('admin'));
    assert.match(metrics.text, /gatehouse_registry_sync_total/);
    conforms('GET', '/metrics', metrics);
    conforms('GET', '/metrics', await admin.request('GET', '/metrics', as('nobody')));
    conforms('GET', '/metrics', await admin.request('GET', '/metrics', as('none')));
  });
});

describe('the document is complete', () => {
  /** `METHOD /path` with every path parameter written `{}` (the routes say `:name`, the document `{serverName}`). */
  const key = (method: string, path: string): string => `${method.toUpperCase()} ${path.replace(/:[A-Za-z]+|\{[A-Za-z]+\}/g, '{}')}`;

  it('every route the servers register is documented with its method', () => {
    const documented = new Set(Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item as Json).map((method) => key(method, path))));
    // The plugins' routes, and what the gateway server answers itself (core/server/gateway-server.ts).
    const served = [...registry.routes, ...admin.routes, { method: 'GET', path: '/healthz' }, { method: 'GET', path: '/readyz' }, { method: 'GET', path: '/metrics' }];
    assert.ok(served.some((route) => route.path.startsWith('/v1/sources')) && served.some((route) => route.path === '/.well-known/oauth-protected-resource/registry'));
    // The protected resource metadata is also served at the path RFC 9728 derives from the resource URL: documented with the base path.
    const missing = served
      .map((route) => key(route.method, route.path.replace(/^\/\.well-known\/oauth-protected-resource\/.+$/, '/.well-known/oauth-protected-resource')))
      .filter((route) => !documented.has(route));
    assert.deepEqual([...new Set(missing)], []);
  });
  it('every documented operation was exercised, and answered by the server', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item as Json).map((method) => `${method.toUpperCase()} ${path}`));
    assert.deepEqual([...exercised].sort(), documented.sort());
  });
});
