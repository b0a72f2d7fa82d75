/**
 * `GET /openapi.json`: public (no token, cross-origin readable), a valid OpenAPI 3.1 document,
 * and accurate: every operation it documents is answered by the server with a status it
 * documents, and the body validates (ajv) against the schema it gives for that status, for
 * servers, skills, tombstones and errors.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startIssuer, type TestIssuer } from './helpers/issuer.ts';
import { oauthYaml, startTestRegistry, type Response, type TestRegistry } from './helpers/registry.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Json = Record<string, any>;

let issuer: TestIssuer;
let registry: TestRegistry;
let token: string;
let doc: Json;
let ajv: Ajv2020;

before(async () => {
  issuer = await startIssuer('registry');
  registry = await startTestRegistry(`${oauthYaml(issuer.url)}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
database: {type: memory}
`);
  token = await issuer.token({ sub: 'publisher' });
  const res = await registry.request('GET', '/openapi.json');
  doc = res.json<Json>();
  ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'https://gatehouse.test/openapi.json', components: doc.components });
});
after(async () => {
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
  });
  it('every documented operation was exercised, and answered by the server', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item as Json).map((method) => `${method.toUpperCase()} ${path}`));
    assert.deepEqual([...exercised].sort(), documented.sort());
  });
});
