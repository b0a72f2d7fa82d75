/**
 * The official server.json schema (2025-12-11) as the registry holds documents to it: the
 * official examples validate, publish and read back byte-equal; every invalid shape (the official
 * invalid examples, a 150-character description, a package pinned to "latest" or a range, a
 * remote without a url) is refused with its JSON path, on publish and in a sync; the union
 * rewrite that keeps errors readable accepts exactly what the schema accepts.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { createAjv, OFFICIAL_SCHEMA_VERSION, OFFICIAL_SERVER_SCHEMA } from '../../plugins/registry/model/official-schema.ts';
import { withExplicitDiscriminators } from '../../plugins/registry/model/discriminated-unions.ts';
import { describeProblems, serverJsonProblems } from '../../plugins/registry/model/server-json.ts';
import { describeOnEngines } from './helpers/engines.ts';
import { startTestRegistry, type Body, type TestRegistry, type VersionBody } from './helpers/registry.ts';

const EXAMPLES = new URL('../../plugins/registry/model/official/examples/', import.meta.url);

function examples(kind: 'valid' | 'invalid'): { file: string; text: string; document: Record<string, unknown> }[] {
  return readdirSync(new URL(`${kind}/`, EXAMPLES))
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const text = readFileSync(new URL(`${kind}/${file}`, EXAMPLES), 'utf8');
      return { file, text, document: JSON.parse(text) as Record<string, unknown> };
    });
}

/** What each official invalid example is refused for. */
const INVALID: Record<string, string> = {
  'bad-name-pattern.json': '/name: must match pattern "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$"',
  'description-too-long.json': '/description: must NOT have more than 100 characters',
  'missing-name.json': '/name: is required',
  'package-version-latest.json': '/packages/0/version: must not be "latest"',
  'positional-argument-missing-value.json': '/packages/0/packageArguments/0: needs "valueHint" or "value"',
};

const base = { name: 'io.github.acme/shapes', version: '1.0.0', description: 'Shapes' };
const npm = (extra: Record<string, unknown> = {}) => ({ registryType: 'npm', identifier: '@acme/shapes', version: '1.0.0', transport: { type: 'stdio' }, ...extra });

/** Invalid shapes and the problem each must be refused with. */
const SHAPES: [string, Record<string, unknown>, string][] = [
  ['a 150-character description', { ...base, description: 'd'.repeat(150) }, '/description: must NOT have more than 100 characters'],
  ['a package pinned to "latest"', { ...base, packages: [npm({ version: 'latest' })] }, '/packages/0/version: must not be "latest"'],
  ['a package pinned to a range', { ...base, packages: [npm({ version: '^1.2.3' })] }, '/packages/0/version: "^1.2.3" is a version range: pin one specific version such as "1.2.3" (rule package-version-range)'],
  ['a remote without url', { ...base, remotes: [{ type: 'streamable-http' }] }, '/remotes/0/url: is required'],
  ['a remote of an unknown type', { ...base, remotes: [{ type: 'grpc', url: 'https://x.example.com' }] }, '/remotes/0/type: must be one of "streamable-http", "sse"'],
  ['a stdio package with a bad argument', { ...base, packages: [npm({ packageArguments: [{ type: 'named' }] })] }, '/packages/0/packageArguments/0/name: is required'],
  ['a websiteUrl that is no URI', { ...base, websiteUrl: 'not a url' }, '/websiteUrl: must match format "uri"'],
];

describe(`the official server.json schema ${OFFICIAL_SCHEMA_VERSION}`, () => {
  it('is the vendored schema of that version', () => {
    assert.equal(OFFICIAL_SERVER_SCHEMA.$id, `https://static.modelcontextprotocol.io/schemas/${OFFICIAL_SCHEMA_VERSION}/server.schema.json`);
  });
  it('accepts every official valid example', () => {
    const valid = examples('valid');
    assert.ok(valid.length >= 3);
    for (const { file, document } of valid) assert.deepEqual(serverJsonProblems(document), [], file);
  });
  it('refuses every official invalid example, naming the JSON path', () => {
    const invalid = examples('invalid');
    assert.deepEqual(invalid.map((e) => e.file), Object.keys(INVALID).sort());
    for (const { file, document } of invalid) assert.equal(describeProblems(serverJsonProblems(document)), INVALID[file], file);
  });
  it('refuses each invalid shape with its path, one line per problem', () => {
    for (const [what, document, problem] of SHAPES) assert.equal(describeProblems(serverJsonProblems(document)), problem, what);
    const all = serverJsonProblems({ ...base, description: 'd'.repeat(150), remotes: [{ type: 'sse' }], packages: [npm({ version: 'latest' })] });
    assert.deepEqual(all.map((p) => p.path), ['/description', '/packages/0/version', '/remotes/0/url']);
  });
  it('bounds an answer to 10 named problems, counting the rest', () => {
    const remotes = Array.from({ length: 25 }, () => ({ type: 'sse' }));
    assert.match(describeProblems(serverJsonProblems({ ...base, remotes })), /\/remotes\/9\/url: is required; and 15 more problems$/);
  });
  it('the union rewrite accepts exactly what the schema accepts (arguments and transports)', () => {
    const plain = createAjv().compile(OFFICIAL_SERVER_SCHEMA);
    const rewritten = createAjv().compile(withExplicitDiscriminators(OFFICIAL_SERVER_SCHEMA));
    const odd = fc.oneof(fc.string({ maxLength: 4 }), fc.boolean(), fc.integer(), fc.constant(null));
    const field = <T>(likely: fc.Arbitrary<T>) => fc.oneof({ arbitrary: likely, weight: 4 }, { arbitrary: odd, weight: 1 });
    const object = fc.record(
      {
        type: field(fc.constantFrom('stdio', 'sse', 'streamable-http', 'positional', 'named', 'grpc')),
        url: field(fc.constantFrom('https://x.example.com/mcp', 'http://{host}/sse', 'ftp://x', '{host}')),
        name: field(fc.constantFrom('--port', 'API_KEY')),
        value: field(fc.constantFrom('8080', '{v}')),
        valueHint: field(fc.constantFrom('path')),
        headers: field(fc.constantFrom([{ name: 'Authorization' }], [{}], [])),
        variables: field(fc.constantFrom({ host: { description: 'h' } }, { host: 3 })),
        isRepeated: field(fc.boolean()),
      },
      { requiredKeys: [] },
    );
    const node = fc.oneof({ arbitrary: object, weight: 9 }, { arbitrary: odd, weight: 1 });
    let valid = 0;
    const place = fc.constantFrom('remote', 'argument', 'transport');
    fc.assert(
      fc.property(place, node, (where, value) => {
        const pkg = { registryType: 'npm', identifier: 'x', transport: where === 'transport' ? value : { type: 'stdio' }, ...(where === 'argument' ? { packageArguments: [value] } : {}) };
        const document = { ...base, packages: [pkg], ...(where === 'remote' ? { remotes: [value] } : {}) };
        const accepted = plain(document);
        if (accepted) valid++;
        assert.equal(rewritten(document), accepted, JSON.stringify(document));
      }),
      { numRuns: 3000 },
    );
    assert.ok(valid > 150, `the generated documents cover both outcomes (${valid} of 3000 valid)`);
  });
});

describeOnEngines('publishing holds server.json to the official schema', (engine) => {
  let registry: TestRegistry;
  before(async () => {
    if (engine.skip !== null) return;
    registry = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
${engine.databaseYaml}
`);
  });
  after(async () => {
    await registry?.stop();
  });
  const publish = (body: unknown) => registry.request('POST', '/main/v0.1/publish', { body });

  engine.test('every official valid example publishes, and reads back byte-equal as JSON', async () => {
    for (const { file, text, document } of examples('valid')) {
      const published = await publish(document);
      assert.equal(published.status, 201, `${file}: ${published.text}`);
      const path = `/main/v0.1/servers/${encodeURIComponent(document.name as string)}/versions/${encodeURIComponent(document.version as string)}`;
      const read = await registry.request('GET', path);
      assert.equal(read.status, 200);
      assert.equal(JSON.stringify(read.json<VersionBody>().server), JSON.stringify(JSON.parse(text)), file);
      assert.equal(JSON.stringify(published.json<VersionBody>().server), JSON.stringify(JSON.parse(text)), file);
    }
  });
  engine.test('every official invalid example, and every invalid shape, is refused: 400 naming its path; nothing is stored', async () => {
    for (const { file, document } of examples('invalid')) {
      const res = await publish(document);
      assert.equal(res.status, 400, file);
      assert.equal(res.json<Body>().error, 'invalid_request');
      // The name problems are said in the registry's own words; the others by the schema's path.
      if (file !== 'bad-name-pattern.json' && file !== 'missing-name.json') assert.ok(res.json<Body>().error_description!.includes(INVALID[file]!), `${file}: ${res.text}`);
    }
    for (const [what, document, problem] of SHAPES) {
      const res = await publish(document);
      assert.equal(res.status, 400, what);
      assert.equal(res.json<Body>().error_description, problem, what);
    }
    assert.equal((await registry.request('GET', '/main/v0.1/servers/io.github.acme%2Fshapes/versions')).status, 404);
  });
  engine.test('the registry\'s own rules and the schema\'s are named together, each field once', async () => {
    const res = await publish({ name: 'io.github.acme/both', version: 'latest', description: '', packages: [npm({ version: 'latest' })] });
    assert.equal(res.status, 400);
    assert.equal(
      res.json<Body>().error_description,
      'version must be a specific version: "latest" is what readers ask for, not something to publish; description is required: a non-empty string saying what it does; /packages/0/version: must not be "latest"',
    );
  });
  engine.test('the Gatehouse conveniences stay: url becomes the remote, type and claims are not stored; the stored document is what was validated', async () => {
    const res = await publish({ ...base, name: 'io.github.acme/conveniences', url: 'https://tools.example.com/mcp', type: 'server', claims: { team: 'a' } });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.json<VersionBody>().server, { ...base, name: 'io.github.acme/conveniences', url: 'https://tools.example.com/mcp', remotes: [{ type: 'streamable-http', url: 'https://tools.example.com/mcp' }] });
    assert.deepEqual(serverJsonProblems(res.json<VersionBody>().server), []);
    const skill = await publish({ type: 'skill', name: 'io.github.acme/skill', version: '1.0.0', description: 's'.repeat(150) });
    assert.equal(skill.status, 201, 'skills have no official schema: their description is not bounded by it');
  });
});
