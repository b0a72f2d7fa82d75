/**
 * Bad input, each answered with a 400/404/405/413/415 whose `error_description` says what is
 * wrong: names and versions (official registry rules), missing fields, claims that are not a
 * flat string map, oversize and malformed bodies, bad query parameters and paths.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestRegistry, type TestRegistry } from './helpers/registry.ts';

let registry: TestRegistry;
before(async () => {
  registry = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
database: {type: memory}
server: {maxBodySize: 2Ki}
`);
});
after(async () => {
  await registry.stop();
});

const publish = (body: unknown) => registry.request('POST', '/main/v0.1/publish', { body });
const valid = { name: 'io.github.acme/weather', version: '1.0.0', description: 'Weather', url: 'https://w.example.com/mcp' };

async function refused(res: Awaited<ReturnType<typeof publish>>, status: number, pattern: RegExp, code?: string): Promise<void> {
  assert.equal(res.status, status, res.text);
  const body = res.json();
  assert.deepEqual(Object.keys(body).filter((k) => k === 'error' || k === 'error_description'), ['error', 'error_description']);
  if (code !== undefined) assert.equal(body.error, code);
  assert.match(body.error_description ?? '', pattern);
}

describe('publish payload', () => {
  it('names must be reverse-DNS namespace/name with exactly one slash', async () => {
    for (const name of ['weather', 'io.acme/weather/extra', '/weather', 'io.acme/', 'io acme/weather', 'io.acme/wea ther', 'a/', 'io.acme/' + 'x'.repeat(200)]) {
      await refused(await publish({ ...valid, name }), 400, /name/, 'invalid_request');
    }
    assert.equal((await publish({ ...valid, name: 'io.github.acme/weather_2.x' })).status, 201);
  });
  it('the version must be one specific version: not "latest", not a range', async () => {
    await refused(await publish({ ...valid, version: 'latest' }), 400, /"latest"/);
    for (const version of ['^1.2.3', '~1.2.3', '>=1.2.3', '<2', '1.x', '1.*', '*', '1.0.0 - 2.0.0', '1 || 2']) {
      await refused(await publish({ ...valid, version }), 400, /is a range/);
    }
    await refused(await publish({ ...valid, version: '1.0/0' }), 400, /must not contain/);
  });
  it('missing fields are named, all at once', async () => {
    await refused(await publish({}), 400, /name is required.*version is required.*description is required/);
    await refused(await publish({ name: valid.name, version: '2.0.0' }), 400, /description is required/);
  });
  it('url must be an http(s) URL; type must be server or skill', async () => {
    await refused(await publish({ ...valid, version: '2.0.0', url: 'ftp://x' }), 400, /url must be an absolute http\(s\) URL/);
    await refused(await publish({ ...valid, version: '2.0.0', type: 'plugin' }), 400, /type must be "server"/);
  });
  it('claims must be a flat map of strings', async () => {
    await refused(await publish({ ...valid, version: '2.0.0', claims: ['org'] }), 400, /claims: must be a flat map of claim names to string values/);
    await refused(await publish({ ...valid, version: '2.0.0', claims: 'org=acme' }), 400, /claims: must be a flat map/);
    await refused(await publish({ ...valid, version: '2.0.0', claims: { team: ['a', 'b'] } }), 400, /claims\.team: must be a string \(got a list\)/);
    await refused(await publish({ ...valid, version: '2.0.0', claims: { org: { name: 'acme' } } }), 400, /claims\.org: must be a string \(got a mapping\)/);
    await refused(await publish({ ...valid, version: '2.0.0', claims: { level: 3 } }), 400, /claims\.level: must be a string \(got 3\)/);
  });
  it('the body must be a JSON object', async () => {
    await refused(await publish([valid]), 400, /must be a JSON object/);
    await refused(await registry.request('POST', '/main/v0.1/publish', { raw: '{"name": ', headers: { 'content-type': 'application/json' } }), 400, /not valid JSON/, 'malformed_json');
  });
  it('the body must be declared JSON: 415', async () => {
    await refused(await registry.request('POST', '/main/v0.1/publish', { raw: JSON.stringify(valid), headers: { 'content-type': 'text/plain' } }), 415, /Content-Type: application\/json/, 'unsupported_media_type');
    await refused(await registry.request('POST', '/main/v0.1/publish', { raw: JSON.stringify(valid) }), 415, /Content-Type/);
  });
  it('a body over the cap: 413', async () => {
    await refused(await publish({ ...valid, version: '3.0.0', description: 'x'.repeat(4096) }), 413, /exceeds the limit of 2048 bytes/, 'payload_too_large');
  });
  it('an unknown registry: 404', async () => {
    await refused(await registry.request('POST', '/nope/v0.1/publish', { body: valid }), 404, /registry "nope" not found/, 'not_found');
    await refused(await registry.request('GET', '/nope/v0.1/servers'), 404, /registry "nope" not found/);
  });
});

describe('list parameters and paths', () => {
  it('limit is an integer from 1 to 100', async () => {
    for (const limit of ['0', '101', 'ten', '1.5', '-1']) await refused(await registry.request('GET', `/main/v0.1/servers?limit=${limit}`), 400, /limit must be an integer from 1 to 100/);
    assert.equal((await registry.request('GET', '/main/v0.1/servers?limit=100')).status, 200);
  });
  it('a cursor the server did not issue: 400', async () => {
    await refused(await registry.request('GET', '/main/v0.1/servers?cursor=garbage'), 400, /cursor is not valid/);
  });
  it('updated_since must be RFC 3339', async () => {
    await refused(await registry.request('GET', '/main/v0.1/servers?updated_since=yesterday'), 400, /updated_since must be an RFC 3339 timestamp/);
    assert.equal((await registry.request('GET', '/main/v0.1/servers?updated_since=2025-08-07T13:15:04.280Z')).status, 200);
  });
  it('invalid percent-encoding in a path segment: 400; unknown path: 404; wrong method: 405', async () => {
    await refused(await registry.request('GET', '/main/v0.1/servers/io.acme%2/versions'), 400, /percent-encoding/);
    assert.equal((await registry.request('GET', '/main/v0.2/servers')).status, 404);
    const wrong = await registry.request('PATCH', '/main/v0.1/publish');
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'POST');
  });
});

describe('admin bodies', () => {
  it('a source body is checked with the config schema: every problem at once', async () => {
    await refused(await registry.request('PUT', '/v1/sources/s1', { body: { managed: {}, syncPolicy: { interval: '5m' }, claims: { a: 1 }, colour: 'red' } }), 400, /colour.*syncPolicy: must not be set on a managed source|syncPolicy.*colour/);
    await refused(await registry.request('PUT', '/v1/sources/s1', { body: {} }), 400, /needs exactly one of git, managed, file/);
  });
  it('path and body names must agree, and be valid names', async () => {
    await refused(await registry.request('PUT', '/v1/sources/s1', { body: { name: 's2', managed: {} } }), 400, /renaming is not supported/);
    await refused(await registry.request('PUT', '/v1/sources/Bad_Name', { body: { managed: {} } }), 400, /invalid source name/);
  });
  it('a registry naming an unknown source: 400 unknown_source with a suggestion', async () => {
    await refused(await registry.request('PUT', '/v1/registries/r1', { body: { sources: ['internl'] } }), 400, /unknown source "internl" \(did you mean "internal"\?\)/, 'unknown_source');
  });
});
