/**
 * `gatehouse registry serve|validate` as a user runs them: data on the embedded store survives a
 * restart, SIGTERM drains and exits 0, one process per data directory, the auth-only startup
 * warning in the log, and validate's report.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli as run, serveCli, type ServedCli } from '../helpers/cli.ts';
import { startIssuer } from './helpers/issuer.ts';
import { tempDir } from './helpers/registry.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';

const serve = (config: string): Promise<ServedCli> => serveCli('registry', config);
const stop = (served: ServedCli): Promise<number | null> => served.stop();

async function writeConfig(yaml: string): Promise<string> {
  const dir = await tempDir();
  const file = join(dir, 'registry.yaml');
  await writeFile(file, yaml);
  return file;
}

const EMBEDDED = `auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
`;

describe('gatehouse registry serve', () => {
  it('keeps published data across a restart on the embedded store (the default database)', { timeout: 120_000 }, async () => {
    const config = await writeConfig(EMBEDDED);
    const first = await serve(config);
    const published = await fetch(`${first.url}/main/v0.1/publish`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'io.github.acme/weather', version: '1.0.0', description: 'Weather', url: 'https://w.example.com/mcp' }),
    });
    assert.equal(published.status, 201);

    // One process per data directory.
    const second = await run(['registry', 'serve', '--config', config, '--port', '0']);
    assert.equal(second.code, 1);
    assert.match(second.stderr, /is in use by process \d+/);

    assert.equal(await stop(first), 0, 'SIGTERM drains and exits 0');
    assert.ok(first.logs.some((l) => l.msg === 'stopped'));

    const again = await serve(config);
    const list = (await (await fetch(`${again.url}/main/v0.1/servers`)).json()) as { servers: { server: { name: string } }[] };
    assert.deepEqual(list.servers.map((s) => s.server.name), ['io.github.acme/weather']);
    assert.equal(await stop(again), 0);
  });

  it('logs the auth-only warning when oauth has no authz block', { timeout: 60_000 }, async () => {
    const issuer = await startIssuer('registry');
    try {
      const config = await writeConfig(`auth:
  mode: oauth
  oauth:
    resourceUrl: http://127.0.0.1:8080
    providers: [{name: test, issuerUrl: "${issuer.url}", audience: registry}]
database: {type: memory}
`);
      const served = await serve(config);
      const warning = served.logs.find((l) => l.msg === 'authorization is not configured and per-entry claims filtering is disabled (auth-only mode)');
      assert.equal(warning?.level, 'warn');
      const res = await fetch(`${served.url}/v1/me`, { headers: { authorization: `Bearer ${await issuer.token({ sub: 'alice' })}` } });
      assert.deepEqual(await res.json(), { subject: 'alice', roles: [] });
      assert.equal(await stop(served), 0);
    } finally {
      await issuer.close();
    }
  });
});

describe('gatehouse registry validate', () => {
  it('says OK with the mode for a good file', async () => {
    const result = await run(['registry', 'validate', '--config', await writeConfig(EMBEDDED)]);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /OK \(anonymous mode, 1 source, 1 registry, database embedded\)/);
  });
  it('validates the examples', async () => {
    for (const example of ['registry.yaml', 'registry-oauth.yaml', 'registry-sources.yaml']) {
      const result = await run(['registry', 'validate', '--config', join(REPO_ROOT, 'examples/registry', example)]);
      assert.equal(result.code, 0, result.stderr);
    }
  });
  it('prints every problem with file:line:col and its YAML path, and exits 2', async () => {
    const config = await writeConfig(`auth:
  mode: anonymous
  authz: {roles: {}}
sources:
  - {name: a, managed: {}, syncPolicy: {interval: 5m}}
registries:
  - {name: r, sources: [b]}
`);
    const result = await run(['registry', 'validate', '--config', config]);
    assert.equal(result.code, 2);
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.length, 3, result.stderr);
    assert.match(lines[0]!, /registry\.yaml:3:3 auth\.authz: needs mode oauth/);
    assert.match(lines[1]!, /registry\.yaml:5:28 sources\[0\]\.syncPolicy: must not be set on a managed source/);
    assert.match(lines[2]!, /registry\.yaml:7:25 registries\[0\]\.sources\[0\]: source "b" not found/);
  });
});
