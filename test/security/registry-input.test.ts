/**
 * What a client puts in a registry request never reaches the database unchecked: NUL bytes in
 * a search, cursor, version or path, out-of-range dates, bodies nested too deep or carrying NUL,
 * and path-like names are each a 400 that names the problem — on PGlite and on PostgreSQL — and
 * the registry keeps serving.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../registry/helpers/postgres.ts';
import { startTestRegistry, type TestRegistry } from '../registry/helpers/registry.ts';

const engines: [string, () => Promise<{ yaml: string; cleanup(): Promise<void> } | { skip: string }>][] = [
  ['PGlite', async () => ({ yaml: '{type: memory}', cleanup: async () => {} })],
  [
    'PostgreSQL',
    async () => {
      const db: TestDatabase | { skip: string } = await createTestDatabase();
      if ('skip' in db) return db;
      return { yaml: `{type: postgres, url: "${db.url}"}`, cleanup: () => db.drop() };
    },
  ],
];

const cursorOf = (key: unknown): string => Buffer.from(JSON.stringify(key)).toString('base64url');

for (const [engine, open] of engines) {
  describe(`registry input on ${engine}`, () => {
    let registry: TestRegistry;
    let cleanup: () => Promise<void> = async () => {};
    let skip: string | null = null;

    before(async () => {
      const opened = await open();
      if ('skip' in opened) {
        skip = opened.skip;
        return;
      }
      cleanup = opened.cleanup;
      registry = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
database: ${opened.yaml}
server: {maxBodySize: 1Mi}
`);
    });
    after(async () => {
      if (skip === null) await registry.stop();
      await cleanup();
    });

    async function refused(method: string, path: string, pattern: RegExp, options: Parameters<TestRegistry['request']>[2] = {}): Promise<void> {
      const res = await registry.request(method, path, options);
      assert.equal(res.status, 400, `${method} ${path}: ${res.text}`);
      assert.match(res.json().error_description ?? '', pattern, `${method} ${path}`);
    }

    it('a NUL in a query parameter, a cursor or a path is a 400 naming it', async (t) => {
      if (skip !== null) return t.skip(skip);
      await refused('GET', '/main/v0.1/servers?search=%00', /search must not contain control characters/);
      await refused('GET', '/main/v0.1/servers?version=1%00', /version must not contain control characters/);
      await refused('GET', `/main/v0.1/servers?cursor=${cursorOf(['\u0000', 'x'])}`, /cursor is not valid/);
      await refused('GET', '/main/v0.1/servers/io.acme%2Fa%00b/versions', /decodes to a control character/);
      await refused('GET', '/main/v0.1/servers/io.acme%2Fw/versions/1%00', /decodes to a control character/);
      await refused('GET', '/v1/sources/a%00', /decodes to a control character/);
      await refused('DELETE', '/main/v0.1/servers/io.acme%2Fw/versions/1%00', /decodes to a control character/);
    });

    it('an updated_since outside the years 0001-9999 is a 400', async (t) => {
      if (skip !== null) return t.skip(skip);
      await refused('GET', '/main/v0.1/servers?updated_since=0000-01-01T00:00:00Z', /years 0001 to 9999/);
      assert.equal((await registry.request('GET', '/main/v0.1/servers?updated_since=0001-01-01T00:00:00Z')).status, 200);
    });

    it('a body nested deeper than 32 levels, or with a NUL in a value or key, is a 400 naming the JSON path', async (t) => {
      if (skip !== null) return t.skip(skip);
      let deep = '1';
      for (let i = 0; i < 100_000; i++) deep = `[${deep}]`;
      const base = { name: 'io.acme/deep', version: '1.0.0', description: 'd' };
      await refused('POST', '/main/v0.1/publish', /\$\.extra(\[0\])+ is nested more than 32 levels deep/, {
        raw: `{"name":"io.acme/deep","version":"1.0.0","description":"d","extra":${deep}}`,
        headers: { 'content-type': 'application/json' },
      });
      await refused('POST', '/main/v0.1/publish', /\$\.description contains a NUL/, { body: { ...base, description: 'd\u0000' } });
      await refused('POST', '/main/v0.1/publish', /\$\.claims has a key with a NUL/, { body: { ...base, claims: { 'a\u0000': 'b' } } });
      await refused('POST', '/main/v0.1/publish', /\$\.meta\["k k"\] contains a NUL/, { body: { ...base, meta: { 'k k': 'v\u0000' } } });
      await refused('PUT', '/v1/sources/s1', /\$\.claims\.a contains a NUL/, { body: { managed: {}, claims: { a: 'b\u0000' } } });
      await refused('PUT', '/v1/sources/s2', /claim values must not contain control characters/, { body: { managed: {}, claims: { a: 'b\u0007' } } });
    });

    it('names that are paths or empty labels are a 400', async (t) => {
      if (skip !== null) return t.skip(skip);
      for (const name of ['../etc', './x', 'io..acme/x', '.io.acme/x', 'io.acme./x', 'io.acme/..', 'io.acme/.hidden', '-io.acme/x', 'io.acme/-x']) {
        await refused('POST', '/main/v0.1/publish', /is not valid/, { body: { name, version: '1.0.0', description: 'd' } });
      }
      await refused('POST', '/main/v0.1/publish', /must not contain control characters/, { body: { name: 'io.acme/v', version: '1.0\u0001', description: 'd' } });
      await refused('POST', '/main/v0.1/publish', /lone UTF-16 surrogate/, { raw: '{"name":"io.acme/v","version":"1.0.0-\\ud800","description":"d"}', headers: { 'content-type': 'application/json' } });
      await refused('POST', '/main/v0.1/publish', /\$\.description contains a lone UTF-16 surrogate/, { raw: '{"name":"io.acme/v","version":"1.0.0","description":"\\udc00x"}', headers: { 'content-type': 'application/json' } });
    });

    it('keeps serving: a valid publish and listing still work', async (t) => {
      if (skip !== null) return t.skip(skip);
      assert.equal((await registry.request('POST', '/main/v0.1/publish', { body: { name: 'io.acme/ok', version: '1.0.0', description: 'fine' } })).status, 201);
      const list = await registry.request('GET', '/main/v0.1/servers?search=ok');
      assert.equal(list.status, 200);
      assert.equal((list.json() as { servers: unknown[] }).servers.length, 1);
    });
  });
}
