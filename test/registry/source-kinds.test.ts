/**
 * Each source kind end to end through a running registry server (its scheduler, writer and
 * API): an api source mirroring a second Gatehouse registry (claims inherited, publishes and
 * deletions arriving as changes, a peer that goes away keeping the last good data) and a
 * cluster-resource source from manifest files (each entry's claims from its own annotation,
 * never the source's). Git sources have their own file (git-sync.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { namesOf, startTestRegistry, tempDir, type ListBody, type TestRegistry } from './helpers/registry.ts';

interface Status {
  phase: string;
  message: string | null;
  servers: number;
  revision?: string;
  skipped: string[];
}

const serverDoc = (name: string, version = '1.0.0') => ({ name, version, description: `${name} server`, url: `https://${name.split('/')[1]}.example.com/mcp` });

describe('an api source mirroring another Gatehouse registry', () => {
  let peer: TestRegistry;
  let mirror: TestRegistry;
  const status = async () => (await mirror.request('GET', '/v1/sources/peer')).json<{ status: Status }>().status;
  const sync = async () => (await mirror.request('POST', '/v1/sources/peer/sync')).json<{ status: Status }>().status;
  const mirrored = async (query = '') => namesOf((await mirror.request('GET', `/main/v0.1/servers${query}`)).json<ListBody>());

  before(async () => {
    peer = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: public, sources: [internal]}]
database: {type: memory}
`);
    for (const name of ['io.acme/alpha', 'io.acme/beta', 'io.acme/gamma']) {
      assert.equal((await peer.request('POST', '/public/v0.1/publish', { body: serverDoc(name) })).status, 201);
    }
    mirror = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: peer, api: {url: "${peer.url}/public"}, syncPolicy: {interval: 1h}, claims: {org: acme}}]
registries: [{name: main, sources: [peer]}]
database: {type: memory}
`);
  });
  after(async () => {
    await mirror?.stop();
    await peer?.stop();
  });

  it('is synced at start, every entry with the source\'s claims', async () => {
    assert.deepEqual(await mirrored(), ['io.acme/alpha@1.0.0', 'io.acme/beta@1.0.0', 'io.acme/gamma@1.0.0']);
    const first = await status();
    assert.deepEqual([first.phase, first.servers], ['ok', 3]);
    assert.ok(first.revision !== undefined, 'the peer\'s high-water mark is kept');
    const entries = (await mirror.request('GET', '/v1/sources/peer/entries')).json<{ entries: { claims: object }[] }>();
    assert.ok(entries.entries.every((e) => JSON.stringify(e.claims) === '{"org":"acme"}'));
  });

  it('learns of publishes and deletions on the peer as changes', async () => {
    assert.equal((await peer.request('POST', '/public/v0.1/publish', { body: serverDoc('io.acme/delta') })).status, 201);
    assert.equal((await peer.request('POST', '/public/v0.1/publish', { body: serverDoc('io.acme/alpha', '1.1.0') })).status, 201);
    assert.equal((await peer.request('DELETE', '/public/v0.1/servers/io.acme%2Fbeta/versions/1.0.0')).status, 200);
    const after = await sync();
    assert.equal(after.phase, 'ok');
    assert.equal(after.servers, 4, 'alpha 1.0.0 and 1.1.0, gamma, delta');
    assert.deepEqual(await mirrored(), ['io.acme/alpha@1.0.0', 'io.acme/alpha@1.1.0', 'io.acme/delta@1.0.0', 'io.acme/gamma@1.0.0']);
    // The deletion is a tombstone here too, so mirrors of this mirror learn of it.
    const withDeleted = (await mirror.request('GET', '/main/v0.1/servers?include_deleted=true')).json<ListBody>();
    const beta = withDeleted.servers?.find((s) => s.server?.name === 'io.acme/beta');
    assert.equal(beta?._meta['io.modelcontextprotocol.registry/official'].status, 'deleted');
    const latest = (await mirror.request('GET', '/main/v0.1/servers/io.acme%2Falpha/versions/latest')).json<{ server: { version: string } }>();
    assert.equal(latest.server.version, '1.1.0');
  });

  it('a peer that goes away keeps the last good data, and the status says why', async () => {
    const before = await mirrored();
    await peer.stop();
    const failed = await sync();
    assert.equal(failed.phase, 'failed');
    assert.ok((failed.message ?? '').length > 0);
    assert.equal(failed.servers, 4);
    assert.deepEqual(await mirrored(), before);
  });
});

describe('a cluster-resource source from manifest files', () => {
  let dir: string;
  let registry: TestRegistry;
  const resource = (name: string, annotations: Record<string, string>) => `apiVersion: toolhive.stacklok.dev/v1alpha1
kind: MCPServer
metadata:
  name: ${name}
  namespace: tools
  annotations:
${Object.entries(annotations).map(([k, v]) => `    ${k}: '${v}'`).join('\n')}
spec:
  image: ghcr.io/acme/${name}:1.2.0
  transport: streamable-http
status:
  url: http://${name}.tools.svc.cluster.local:8080/mcp
`;

  before(async () => {
    dir = await tempDir();
    await mkdir(join(dir, 'servers'));
    await writeFile(
      join(dir, 'servers', 'all.yaml'),
      [
        resource('fetch', { 'toolhive.stacklok.dev/registry-export': 'true', 'toolhive.stacklok.dev/authz-claims': '{"team":"data"}' }),
        resource('search', { 'toolhive.stacklok.dev/registry-export': 'true' }),
        resource('broken', { 'toolhive.stacklok.dev/registry-export': 'true', 'toolhive.stacklok.dev/authz-claims': '{"team": 7}' }),
        resource('private', { 'toolhive.stacklok.dev/registry-export': 'false' }),
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: b}\n',
      ].join('---\n'),
    );
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources: [{name: cluster, cluster: {manifests: [./servers]}, syncPolicy: {interval: 1h}, claims: {team: platform}}]
registries: [{name: main, sources: [cluster]}]
database: {type: memory}
`,
      dir,
    );
  });
  after(async () => {
    await registry?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('exports the resources that opt in, each with the claims of its own annotation', async () => {
    const entries = (await registry.request('GET', '/v1/sources/cluster/entries')).json<{ entries: { name: string; claims: object; versions: { version: string }[] }[] }>();
    assert.deepEqual(
      entries.entries.map((e) => [e.name, e.claims, e.versions.map((v) => v.version)]),
      [
        ['com.toolhive.k8s.tools/fetch', { team: 'data' }, ['1.2.0']],
        ['com.toolhive.k8s.tools/search', {}, ['1.2.0']],
      ],
      'the source\'s claims {team: platform} are not inherited',
    );
    const fetchServer = (await registry.request('GET', '/main/v0.1/servers/com.toolhive.k8s.tools%2Ffetch/versions/latest')).json<{ server: { remotes: { url: string }[]; packages: { identifier: string }[] } }>();
    assert.equal(fetchServer.server.remotes[0]?.url, 'http://fetch.tools.svc.cluster.local:8080/mcp');
    assert.match(fetchServer.server.packages[0]?.identifier ?? '', /ghcr\.io\/acme\/fetch/);
  });

  it('names the resource it refused in the source\'s status', async () => {
    const status = (await registry.request('GET', '/v1/sources/cluster')).json<{ status: Status & { skippedCount: number } }>().status;
    assert.equal(status.phase, 'ok');
    assert.equal(status.skippedCount, 1);
    assert.match(status.skipped[0] ?? '', /tools\/broken.*authz-claims/);
  });

  it('changing the source\'s claims leaves the entries\' own claims alone', async () => {
    const put = await registry.request('PUT', '/v1/sources/cluster', { body: { cluster: { manifests: [join(dir, 'servers')] }, claims: { team: 'ops' } } });
    assert.equal(put.status, 409, 'config-defined: read-only through the API');
    const entries = (await registry.request('GET', '/v1/sources/cluster/entries')).json<{ entries: { claims: object }[] }>();
    assert.deepEqual(entries.entries.map((e) => e.claims), [{ team: 'data' }, {}]);
  });
});
