/**
 * Cluster-resource sources: MCPServer resources as server entries, from manifest files or
 * watched in a Kubernetes cluster (a loopback fake of the API server). Each entry's claims come
 * from its own `authz-claims` annotation, never from the source; a resource that cannot be an
 * entry is skipped and named, never failing the source.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { createClusterReader, type ClusterReader, type ClusterReaderOptions } from '../../plugins/registry/sync/cluster-reader.ts';
import { imageTag, isPublishableVersion, mapClusterResource, slimResource } from '../../plugins/registry/sync/cluster-resource.ts';
import { SyncFailure, type ReadOutcome } from '../../plugins/registry/sync/source-reader.ts';
import type { SyncStatus } from '../../plugins/registry/store/records.ts';
import { serverJsonProblems } from '../../plugins/registry/model/server-json.ts';
import { KubeApiServer, type KubeObject } from '../fixtures/kube-api-server.ts';

const EXPORT = { 'toolhive.stacklok.dev/registry-export': 'true' };
const CLAIMS = 'toolhive.stacklok.dev/authz-claims';

/** A ToolHive MCPServer that opts in to the registry. */
function toolhive(name: string, namespace: string, annotations: Record<string, unknown> = {}, spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}, labels?: Record<string, string>): KubeObject {
  return {
    apiVersion: 'toolhive.stacklok.dev/v1alpha1',
    kind: 'MCPServer',
    metadata: { name, namespace, ...(labels === undefined ? {} : { labels }), annotations: { ...EXPORT, ...annotations } as Record<string, string> },
    spec: { image: `ghcr.io/acme/${name}:1.2.0`, transport: 'stdio', ...spec },
    status,
  };
}

/** Gatehouse's own MCPServer (core/config/vmcp-schema.ts). */
function gatehouse(name: string, url: string, annotations: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'gatehouse.dev/v1alpha1', kind: 'MCPServer', metadata: { name, annotations: { ...EXPORT, ...annotations } }, spec: { url, transport: 'streamable-http', groupRef: 'main' } };
}

const map = (object: Record<string, unknown>) => mapClusterResource(slimResource(object));
const context = (previous: ReadOutcome | null = null) => ({
  signal: AbortSignal.timeout(20_000),
  previous: previous !== null && previous.type === 'snapshot' ? ({ digest: previous.digest } as SyncStatus) : null,
});

function snapshotOf(outcome: ReadOutcome) {
  assert.equal(outcome.type, 'snapshot', `expected a snapshot, got ${JSON.stringify(outcome)}`);
  return outcome as Extract<ReadOutcome, { type: 'snapshot' }>;
}
const names = (outcome: ReadOutcome) => snapshotOf(outcome).items.map((item) => item.name);
const claimsByName = (outcome: ReadOutcome) => Object.fromEntries(snapshotOf(outcome).items.map((item) => [item.name, item.claims]));

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('an MCPServer as a server.json', () => {
  it('a ToolHive MCPServer: name from namespace and name, version from the image tag, the operator URL as a remote, the image as an OCI package', () => {
    const mapped = map({ ...toolhive('fetch', 'tools', {}, {}, { url: 'http://mcp-fetch-proxy.tools.svc.cluster.local:8080/mcp', conditions: [] }), metadata: { name: 'fetch', namespace: 'tools', uid: 'u-1', annotations: EXPORT } });
    assert.ok('item' in mapped, JSON.stringify(mapped));
    assert.deepEqual(mapped.item.document, {
      $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
      name: 'com.toolhive.k8s.tools/fetch',
      description: 'MCP server tools/fetch',
      version: '1.2.0',
      remotes: [{ type: 'streamable-http', url: 'http://mcp-fetch-proxy.tools.svc.cluster.local:8080/mcp' }],
      packages: [{ registryType: 'oci', identifier: 'ghcr.io/acme/fetch:1.2.0', transport: { type: 'stdio' } }],
      _meta: { 'io.modelcontextprotocol.registry/publisher-provided': { 'dev.gatehouse/kubernetes': { kind: 'MCPServer', apiVersion: 'toolhive.stacklok.dev/v1alpha1', namespace: 'tools', name: 'fetch', uid: 'u-1' } } },
    });
    assert.equal(mapped.item.kind, 'server');
    assert.equal(mapped.item.version, '1.2.0');
    assert.deepEqual(mapped.item.claims, {});
  });

  it('the registry annotations override the description, URL and version, and add a title and an icon', () => {
    const mapped = map(
      toolhive('fetch', 'tools', {
        'toolhive.stacklok.dev/registry-description': 'Fetches web pages',
        'toolhive.stacklok.dev/registry-url': 'https://mcp.example.com/fetch/mcp',
        'toolhive.stacklok.dev/registry-version': '2.5.0-rc.1',
        'toolhive.stacklok.dev/registry-title': 'Fetch',
        'toolhive.stacklok.dev/registry-icon': 'https://example.com/fetch.png',
      }, {}, { url: 'http://in-cluster:8080/mcp' }),
    );
    assert.ok('item' in mapped, JSON.stringify(mapped));
    const document = mapped.item.document;
    assert.equal(document.description, 'Fetches web pages');
    assert.equal(document.version, '2.5.0-rc.1');
    assert.equal(document.title, 'Fetch');
    assert.deepEqual(document.icons, [{ src: 'https://example.com/fetch.png' }]);
    assert.deepEqual(document.remotes, [{ type: 'streamable-http', url: 'https://mcp.example.com/fetch/mcp' }]);
  });

  it("Gatehouse's own MCPServer: spec.url as a streamable-http remote, the namespace 'default' when none is set, no package without an image", () => {
    const mapped = map(gatehouse('docs', 'http://127.0.0.1:9101/mcp'));
    assert.ok('item' in mapped, JSON.stringify(mapped));
    assert.equal(mapped.item.name, 'com.toolhive.k8s.default/docs');
    assert.equal(mapped.item.version, '1.0.0');
    assert.deepEqual(mapped.item.document.remotes, [{ type: 'streamable-http', url: 'http://127.0.0.1:9101/mcp' }]);
    assert.equal(mapped.item.document.packages, undefined);
  });

  it('transports: an SSE server gets an sse remote and its package an sse URL on its port; stdio behind an SSE proxy an sse remote', () => {
    const sse = map(toolhive('events', 'tools', {}, { transport: 'sse', mcpPort: 9000 }, { url: 'http://events:8080/sse#events' }));
    assert.ok('item' in sse, JSON.stringify(sse));
    assert.deepEqual(sse.item.document.remotes, [{ type: 'sse', url: 'http://events:8080/sse#events' }]);
    assert.deepEqual((sse.item.document.packages as { transport: unknown }[])[0]!.transport, { type: 'sse', url: 'http://localhost:9000/sse' });
    const proxied = map(toolhive('old', 'tools', {}, { transport: 'stdio', proxyMode: 'sse' }, { url: 'http://old:8080/sse#old' }));
    assert.ok('item' in proxied);
    assert.deepEqual(proxied.item.document.remotes, [{ type: 'sse', url: 'http://old:8080/sse#old' }]);
    const http = map(toolhive('web', 'tools', {}, { transport: 'streamable-http' }));
    assert.ok('item' in http);
    assert.deepEqual((http.item.document.packages as { transport: unknown }[])[0]!.transport, { type: 'streamable-http', url: 'http://localhost:8080/mcp' });
    assert.equal(http.item.document.remotes, undefined, 'no URL yet (the operator has not published status.url): the package alone');
  });

  it("versions as ToolHive resolves them: the annotation, else the image's semver tag, else 1.0.0", () => {
    const version = (image: string, annotation?: string) => {
      const mapped = map(toolhive('s', 'ns', annotation === undefined ? {} : { 'toolhive.stacklok.dev/registry-version': annotation }, { image }));
      assert.ok('item' in mapped, JSON.stringify(mapped));
      return mapped.item.version;
    };
    assert.equal(version('ghcr.io/acme/s:v1.4.2'), 'v1.4.2');
    assert.equal(version('ghcr.io/acme/s:1.4.2@sha256:abcd'), '1.4.2');
    assert.equal(version('ghcr.io/acme/s@sha256:abcd'), '1.0.0');
    assert.equal(version('ghcr.io/acme/s:latest'), '1.0.0');
    assert.equal(version('ghcr.io/acme/s:1.2'), '1.0.0');
    assert.equal(version('registry.internal:5000/s'), '1.0.0');
    assert.equal(version('ghcr.io/acme/s:1.4.2+build.7'), '1.0.0');
    assert.equal(version('ghcr.io/acme/s:1.4.2', '3.0.0'), '3.0.0');
    assert.equal(imageTag('registry.internal:5000/db:1.0.0'), '1.0.0');
    assert.equal(isPublishableVersion('01.2.3'), false);
    assert.equal(isPublishableVersion('1.2.3-alpha.1'), true);
  });

  it('is exported only when it opts in: no annotation or "false" is ignored, another value is named as a mistake', () => {
    assert.deepEqual(map({ ...toolhive('s', 'ns'), metadata: { name: 's', namespace: 'ns' } }), { ignored: true });
    assert.deepEqual(map(toolhive('s', 'ns', { 'toolhive.stacklok.dev/registry-export': 'false' })), { ignored: true });
    assert.deepEqual(map(toolhive('s', 'ns', { 'toolhive.stacklok.dev/registry-export': 'yes' })), {
      problem: 'MCPServer ns/s: annotation toolhive.stacklok.dev/registry-export is "yes": set it to "true" to list the server in the registry (or "false")',
    });
  });

  it('reads the annotations under the gatehouse.dev prefix too; both prefixes must agree', () => {
    const alias = map({ ...gatehouse('docs', 'http://docs/mcp'), metadata: { name: 'docs', annotations: { 'gatehouse.dev/registry-export': 'true', 'gatehouse.dev/authz-claims': '{"team":"docs"}' } } });
    assert.ok('item' in alias, JSON.stringify(alias));
    assert.deepEqual(alias.item.claims, { team: 'docs' });
    const both = map(gatehouse('docs', 'http://docs/mcp', { [CLAIMS]: '{"team":"a"}', 'gatehouse.dev/authz-claims': '{"team":"b"}' }));
    assert.deepEqual(both, { problem: 'MCPServer default/docs: annotations toolhive.stacklok.dev/authz-claims and gatehouse.dev/authz-claims disagree: set one of them' });
  });

  it('claims: a flat JSON map of strings, kept whole (a claim named __proto__ too); blank or absent is no claims', () => {
    const claims = (value: string | undefined) => {
      const mapped = map(gatehouse('docs', 'http://docs/mcp', value === undefined ? {} : { [CLAIMS]: value }));
      assert.ok('item' in mapped, JSON.stringify(mapped));
      return mapped.item.claims;
    };
    assert.deepEqual(claims('{"team": "platform", "env": "prod"}'), { team: 'platform', env: 'prod' });
    assert.deepEqual(Object.keys(claims('{"__proto__": "x"}')), ['__proto__']);
    assert.deepEqual(claims(''), {});
    assert.deepEqual(claims(undefined), {});
    assert.deepEqual(claims('{}'), {});
  });
});

describe('a cluster source from manifests', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-cluster-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const read = (manifests: string[], options: ClusterReaderOptions = {}, previous: ReadOutcome | null = null) => createClusterReader({ manifests }, { baseDir: dir, ...options }).read(context(previous));

  it('reads files and directories of YAML and JSON: every exported MCPServer, other kinds ignored, each entry with its own claims', async () => {
    await mkdir(join(dir, 'servers', 'nested'), { recursive: true });
    // A whole vMCP configuration: only its exported MCPServers are entries.
    await writeFile(
      join(dir, 'vmcp.yaml'),
      [
        stringify({ apiVersion: 'gatehouse.dev/v1alpha1', kind: 'MCPGroup', metadata: { name: 'main' } }),
        stringify(gatehouse('docs', 'http://127.0.0.1:9101/mcp', { [CLAIMS]: '{"team": "docs"}' })),
        stringify({ apiVersion: 'gatehouse.dev/v1alpha1', kind: 'MCPServer', metadata: { name: 'internal' }, spec: { url: 'http://127.0.0.1:9102/mcp', groupRef: 'main' } }),
        stringify({ apiVersion: 'gatehouse.dev/v1alpha1', kind: 'VirtualMCPServer', metadata: { name: 'main' }, spec: { config: { groupRef: 'main' } } }),
        stringify(gatehouse('demo', 'http://127.0.0.1:9100/mcp')),
      ].join('---\n'),
    );
    await writeFile(join(dir, 'servers', 'a.yaml'), stringify(toolhive('fetch', 'tools', { [CLAIMS]: '{"org": "acme", "team": "web"}' }, {}, { url: 'http://fetch:8080/mcp' })));
    // `kubectl get mcpservers -o yaml` writes a List.
    await writeFile(join(dir, 'servers', 'b.yml'), stringify({ apiVersion: 'v1', kind: 'List', items: [toolhive('git', 'tools'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }] }));
    await writeFile(join(dir, 'servers', 'c.json'), JSON.stringify(toolhive('time', 'utils', { [CLAIMS]: '{"team": "utils"}' })));
    await writeFile(join(dir, 'servers', 'notes.txt'), 'not a manifest');
    await writeFile(join(dir, 'servers', 'nested', 'd.yaml'), stringify(toolhive('hidden', 'tools')));

    const outcome = await read(['vmcp.yaml', 'servers']);
    assert.deepEqual(names(outcome), ['com.toolhive.k8s.default/demo', 'com.toolhive.k8s.default/docs', 'com.toolhive.k8s.tools/fetch', 'com.toolhive.k8s.tools/git', 'com.toolhive.k8s.utils/time']);
    assert.deepEqual(claimsByName(outcome), {
      'com.toolhive.k8s.default/demo': {},
      'com.toolhive.k8s.default/docs': { team: 'docs' },
      'com.toolhive.k8s.tools/fetch': { org: 'acme', team: 'web' },
      'com.toolhive.k8s.tools/git': {},
      'com.toolhive.k8s.utils/time': { team: 'utils' },
    });
    assert.deepEqual(snapshotOf(outcome).skipped, []);
    for (const item of snapshotOf(outcome).items) {
      // Every item carries its claims, so none inherits the source's.
      assert.ok(item.claims !== undefined);
      assert.deepEqual(serverJsonProblems(item.document), [], `${item.name} validates against the official schema`);
    }
  });

  it('skips each resource that cannot be an entry, naming it and why; the others are read', async () => {
    const bad = [
      toolhive('ok', 'ns'),
      toolhive('claims-json', 'ns', { [CLAIMS]: '{team: platform}' }),
      toolhive('claims-list', 'ns', { [CLAIMS]: '{"team": ["a", "b"]}' }),
      toolhive('claims-array', 'ns', { [CLAIMS]: '["team"]' }),
      toolhive('nothing', 'ns', {}, { image: '' }),
      toolhive('bad/name', 'ns'),
      toolhive('ok', 'under_score'),
      toolhive('long', 'ns', { 'toolhive.stacklok.dev/registry-description': 'x'.repeat(101) }),
      toolhive('version', 'ns', { 'toolhive.stacklok.dev/registry-version': 'latest' }),
      toolhive('secret-url', 'ns', { 'toolhive.stacklok.dev/registry-url': 'https://user:hunter2@mcp.example.com/mcp' }),
      toolhive('transport', 'ns', {}, { transport: 'websocket' }),
      { ...toolhive('unquoted', 'ns'), metadata: { name: 'unquoted', namespace: 'ns', annotations: { 'toolhive.stacklok.dev/registry-export': true } } },
    ];
    await writeFile(join(dir, 'bad.yaml'), bad.map((doc) => stringify(doc)).join('---\n'));
    const outcome = snapshotOf(await read(['bad.yaml']));
    assert.deepEqual(names(outcome), ['com.toolhive.k8s.ns/ok']);
    const skipped = outcome.skipped;
    assert.equal(skipped.length, bad.length - 1, skipped.join('\n'));
    const expected = [
      ['MCPServer ns/claims-json: annotation toolhive.stacklok.dev/authz-claims is not a JSON object of strings: ', 'bad.yaml, document 2'],
      ['MCPServer ns/claims-list: annotation toolhive.stacklok.dev/authz-claims is not a JSON object of strings: claim "team" is a list', 'document 3'],
      ['MCPServer ns/claims-array: annotation toolhive.stacklok.dev/authz-claims is not a JSON object of strings (got a list)', 'document 4'],
      ['MCPServer ns/nothing: it has no URL (annotation toolhive.stacklok.dev/registry-url, spec.url or status.url) and no image (spec.image)', 'document 5'],
      ['MCPServer ns/"bad/name": its registry name is not valid (namespace and metadata.name must be DNS names): name "com.toolhive.k8s.ns/bad/name" is not valid', 'document 6'],
      ['MCPServer under_score/ok: its registry name is not valid', 'document 7'],
      ['MCPServer ns/long: annotation toolhive.stacklok.dev/registry-description is 101 characters long: the registry allows at most 100', 'document 8'],
      ['MCPServer ns/version: annotation toolhive.stacklok.dev/registry-version is "latest"', 'document 9'],
      ['MCPServer ns/secret-url: annotation toolhive.stacklok.dev/registry-url must not contain credentials', 'document 10'],
      ['MCPServer ns/transport: spec.transport is "websocket": use one of stdio, streamable-http, sse', 'document 11'],
      ['MCPServer ns/unquoted: annotation toolhive.stacklok.dev/registry-export must be a string (got boolean true): quote the value', 'document 12'],
    ];
    expected.forEach(([start, where], index) => {
      assert.ok(skipped[index]!.startsWith(start!), `${skipped[index]} should start with ${start}`);
      assert.ok(skipped[index]!.includes(where!), `${skipped[index]} should name ${where}`);
    });
    assert.ok(!skipped.some((message) => message.includes('hunter2')), 'a credential is never echoed');
  });

  it('an unchanged set reads as unchanged; a change to a file is a new snapshot', async () => {
    await writeFile(join(dir, 'one.yaml'), stringify(toolhive('one', 'ns')));
    const first = await read(['one.yaml']);
    assert.deepEqual(await read(['one.yaml'], {}, first), { type: 'unchanged' });
    await writeFile(join(dir, 'one.yaml'), stringify(toolhive('one', 'ns', { [CLAIMS]: '{"team": "a"}' })));
    const second = await read(['one.yaml'], {}, first);
    assert.notEqual(snapshotOf(second).digest, snapshotOf(first).digest, 'a change of claims alone is a change');
  });

  it('a resource defined twice: the first definition is kept, the second named', async () => {
    await writeFile(join(dir, 'twice.yaml'), [stringify(toolhive('dup', 'ns', { 'toolhive.stacklok.dev/registry-description': 'first' })), stringify(toolhive('dup', 'ns'))].join('---\n'));
    const outcome = snapshotOf(await read(['twice.yaml']));
    assert.equal(outcome.items.length, 1);
    assert.equal(outcome.items[0]!.document.description, 'first');
    assert.match(outcome.skipped[0]!, /^com\.toolhive\.k8s\.ns\/dup version 1\.2\.0: defined again \(twice\.yaml, document 2\)/);
  });

  it('fails as a whole (the last good data stays) when a path is missing, a file is not YAML, or the limits are passed', async () => {
    await assert.rejects(read(['missing.yaml']), (err: unknown) => err instanceof SyncFailure && err.message === 'manifest path missing.yaml does not exist');
    await writeFile(join(dir, 'broken.yaml'), 'kind: MCPServer\nmetadata: {name: [\n');
    await assert.rejects(read(['broken.yaml']), (err: unknown) => err instanceof SyncFailure && /^manifest file broken\.yaml:\d+:\d+: /.test(err.message));
    await writeFile(join(dir, 'big.yaml'), `# ${'x'.repeat(2000)}\n`);
    await assert.rejects(read(['big.yaml'], { manifestLimits: { maxFileBytes: 1000 } }), /manifest file big\.yaml is larger than 1000 bytes/);
    await assert.rejects(read(['servers'], { manifestLimits: { maxFiles: 2 } }), /the manifest paths hold more than 2 files/);
    await writeFile(join(dir, 'binary.yaml'), Buffer.from([0xff, 0xfe, 0x00]));
    await assert.rejects(read(['binary.yaml']), /manifest file binary\.yaml is not UTF-8 text/);
    assert.throws(() => createClusterReader({ manifests: [] }), /cluster\.manifests must list at least one file or directory/);
  });
});

describe('a cluster source watching Kubernetes', () => {
  let dir: string;
  let api: KubeApiServer;
  let kubeconfig: string;
  const readers: ClusterReader[] = [];
  const fast = { firstBackoffMs: 20, maxBackoffMs: 200 };

  function open(kubernetes: { namespace?: string | null; labelSelector?: string | null; kubeconfig?: string } = {}, options: ClusterReaderOptions = {}) {
    const reader = createClusterReader(
      { kubernetes: { namespace: kubernetes.namespace ?? null, labelSelector: kubernetes.labelSelector ?? null, kubeconfig: kubernetes.kubeconfig ?? kubeconfig } },
      { debounceMs: 50, ...options, watchLimits: { ...fast, ...options.watchLimits } },
    );
    readers.push(reader);
    let changes = 0;
    reader.onChange(() => changes++);
    return { reader, changes: () => changes };
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-kube-'));
  });
  afterEach(async () => {
    for (const reader of readers.splice(0)) await reader.close?.();
    await api?.close();
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function startApi(objects: KubeObject[]): Promise<void> {
    api = await KubeApiServer.start();
    for (const object of objects) api.add(object);
    kubeconfig = await api.kubeconfig(dir);
  }

  it('lists with the bearer token, then follows additions, changes and deletions (onChange, then read)', async () => {
    await startApi([toolhive('fetch', 'tools', { [CLAIMS]: '{"team": "web"}' }), toolhive('time', 'utils')]);
    const { reader, changes } = open();
    const first = await reader.read(context());
    assert.deepEqual(names(first), ['com.toolhive.k8s.tools/fetch', 'com.toolhive.k8s.utils/time']);
    assert.deepEqual(claimsByName(first), { 'com.toolhive.k8s.tools/fetch': { team: 'web' }, 'com.toolhive.k8s.utils/time': {} });
    assert.deepEqual(await reader.read(context(first)), { type: 'unchanged' });

    await until(() => api.openWatches === 1, 'the watch');
    assert.equal(changes(), 0, 'the first list answers the waiting read: nothing to announce');
    const watch = api.watchRequests()[0]!;
    assert.equal(watch.path, '/apis/toolhive.stacklok.dev/v1alpha1/mcpservers');
    assert.equal(watch.query.allowWatchBookmarks, 'true');
    assert.ok(Number(watch.query.resourceVersion) > 0);
    assert.ok(api.requests.every((request) => request.authorization === `Bearer ${api.token}`), 'every request carries the token');

    let seen = changes();
    api.add(toolhive('git', 'tools'));
    await until(() => changes() > seen, 'onChange after ADDED');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.tools/fetch', 'com.toolhive.k8s.tools/git', 'com.toolhive.k8s.utils/time']);

    seen = changes();
    api.modify(toolhive('fetch', 'tools', { [CLAIMS]: '{"team": "platform"}' }));
    await until(() => changes() > seen, 'onChange after MODIFIED');
    assert.deepEqual(claimsByName(await reader.read(context()))['com.toolhive.k8s.tools/fetch'], { team: 'platform' });

    seen = changes();
    api.remove('utils', 'time');
    await until(() => changes() > seen, 'onChange after DELETED');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.tools/fetch', 'com.toolhive.k8s.tools/git']);

    // A status update the mapping does not read (conditions) is no change.
    seen = changes();
    api.modify({ ...toolhive('git', 'tools'), status: { conditions: [{ type: 'Ready', status: 'True' }] } });
    api.bookmark();
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(changes(), seen);
    assert.equal(api.listRequests().length, 1, 'one list: the rest came through the watch');
  });

  it('changes close together make one onChange (debounced)', async () => {
    await startApi([]);
    const { reader, changes } = open({}, { debounceMs: 200 });
    await reader.read(context());
    await until(() => api.openWatches === 1, 'the watch');
    const seen = changes();
    for (const name of ['a', 'b', 'c', 'd']) api.add(toolhive(name, 'ns'));
    await until(() => changes() > seen, 'onChange');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(changes(), seen + 1);
    assert.equal(snapshotOf(await reader.read(context())).items.length, 4);
  });

  it('an expired resourceVersion (410 Gone) makes it list again, and it keeps following', async () => {
    await startApi([toolhive('fetch', 'tools')]);
    const { reader, changes } = open();
    await reader.read(context());
    await until(() => api.openWatches === 1, 'the watch');
    api.expire();
    await until(() => api.listRequests().length === 2 && api.openWatches === 1, 'a new list and watch');
    const seen = changes();
    api.add(toolhive('git', 'tools'));
    await until(() => changes() > seen, 'onChange after the relist');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.tools/fetch', 'com.toolhive.k8s.tools/git']);
  });

  it('list pages (limit and continue); an expired continue token starts the list over', async () => {
    await startApi(['a', 'b', 'c', 'd', 'e'].map((name) => toolhive(name, 'ns')));
    const { reader } = open({}, { watchLimits: { pageSize: 2 } });
    assert.equal(snapshotOf(await reader.read(context())).items.length, 5);
    const lists = api.listRequests();
    assert.equal(lists.length, 3);
    assert.deepEqual(lists.map((request) => request.query.limit), ['2', '2', '2']);
    assert.ok(lists[1]!.query.continue !== undefined);

    const again = open({}, { watchLimits: { pageSize: 2 } });
    const before = api.listRequests().length;
    api.failNext(410, 1, 'The provided continue parameter is too old', (request) => request.query.continue !== undefined);
    assert.equal(snapshotOf(await again.reader.read(context())).items.length, 5);
    const pages = api.listRequests().slice(before).map((request) => request.query.continue === undefined);
    assert.deepEqual(pages, [true, false, true, false, false], 'first page, 410 on the second, then the whole list again');
  });

  it('reconnects when the API server goes away and comes back, and catches up from its resourceVersion', async () => {
    await startApi([toolhive('fetch', 'tools')]);
    const { reader, changes } = open();
    await reader.read(context());
    await until(() => api.openWatches === 1, 'the watch');
    await api.stop();
    api.add(toolhive('git', 'tools'));
    // While it is away, reads serve the last known set.
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.tools/fetch']);
    const seen = changes();
    await api.restart();
    await until(() => changes() > seen, 'onChange after the reconnection');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.tools/fetch', 'com.toolhive.k8s.tools/git']);
    const watches = api.watchRequests();
    assert.ok(Number(watches.at(-1)!.query.resourceVersion) > 0, 'the watch resumes from a resourceVersion');
    assert.equal(api.listRequests().length, 1, 'no list was needed: the events since were still there');

    // Away again, and its history compacted meanwhile: the watch gets 410 and it lists again.
    await api.stop();
    api.remove('tools', 'fetch');
    api.expire();
    const before = changes();
    await api.restart();
    await until(() => changes() > before, 'onChange after the relist');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.tools/git']);
    assert.equal(api.listRequests().length, 2);
  });

  it('a namespace and a label selector narrow what is listed and watched', async () => {
    await startApi([
      toolhive('a', 'team-a', {}, {}, {}, { registry: 'public' }),
      toolhive('b', 'team-a', {}, {}, {}, { registry: 'private' }),
      toolhive('c', 'team-b', {}, {}, {}, { registry: 'public' }),
    ]);
    const { reader, changes } = open({ namespace: 'team-a', labelSelector: 'registry=public' });
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.team-a/a']);
    assert.equal(api.listRequests()[0]!.path, '/apis/toolhive.stacklok.dev/v1alpha1/namespaces/team-a/mcpservers');
    assert.equal(api.listRequests()[0]!.query.labelSelector, 'registry=public');
    await until(() => api.openWatches === 1, 'the watch');
    const seen = changes();
    api.modify(toolhive('b', 'team-a', {}, {}, {}, { registry: 'public' }));
    await until(() => changes() > seen, 'onChange when b is labelled public');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.team-a/a', 'com.toolhive.k8s.team-a/b']);
  });

  it('fails the read with what to fix, never echoing the token: a refused token, a missing CRD, a missing kubeconfig', async () => {
    await startApi([toolhive('fetch', 'tools')]);
    const wrong = await api.kubeconfig(dir, 'not-the-token');
    const refused = open({ kubeconfig: wrong });
    await assert.rejects(refused.reader.read(context()), (err: unknown) => {
      assert.ok(err instanceof SyncFailure);
      assert.match(err.message, /^cannot list mcpservers\.toolhive\.stacklok\.dev\/v1alpha1 in all namespaces: the Kubernetes API server answered 401 Unauthorized/);
      assert.ok(!err.message.includes('not-the-token') && !err.message.includes(api.token));
      return true;
    });
    const noCrd = open({}, { resource: { group: 'toolhive.stacklok.dev', version: 'v1beta9', plural: 'mcpservers' } });
    await assert.rejects(noCrd.reader.read(context()), /answered 404 Not Found .*is the MCPServer custom resource definition, mcpservers\.toolhive\.stacklok\.dev\/v1beta9, installed\?/);
    assert.throws(() => open({ kubeconfig: join(dir, 'nope.yaml') }), (err: unknown) => err instanceof SyncFailure && err.message === `kubeconfig ${join(dir, 'nope.yaml')} does not exist`);
    assert.throws(() => open({ namespace: 'Not A Namespace' }), /is not a namespace name/);
    if (process.env.KUBERNETES_SERVICE_HOST === undefined) {
      assert.throws(
        () => createClusterReader({ kubernetes: { namespace: null, labelSelector: null, kubeconfig: null } }),
        (err: unknown) => err instanceof SyncFailure && err.message.startsWith('not running inside a Kubernetes cluster (KUBERNETES_SERVICE_HOST is not set)'),
      );
    }
  });

  it('a first list that fails is retried with back-off; onChange tells when it succeeds', async () => {
    await startApi([toolhive('fetch', 'tools')]);
    api.failNext(503, 3, 'etcd is unavailable');
    const { reader, changes } = open();
    await assert.rejects(reader.read(context()), /answered 503 Service Unavailable .*: etcd is unavailable/);
    await until(() => changes() > 0, 'onChange after the recovery');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.tools/fetch']);
  });

  it('bounds: more resources than allowed fail the read; an oversized event drops the watch, which resumes', async () => {
    await startApi(['a', 'b', 'c'].map((name) => toolhive(name, 'ns')));
    const crowded = open({}, { watchLimits: { maxResources: 2 } });
    await assert.rejects(crowded.reader.read(context()), /there are more than 2 mcpservers\.toolhive\.stacklok\.dev\/v1alpha1 in all namespaces: narrow the source/);
    await crowded.reader.close?.();

    const { reader, changes } = open({}, { watchLimits: { maxEventBytes: 4096 } });
    await reader.read(context());
    await until(() => api.openWatches === 1, 'the watch');
    const watches = api.watchRequests().length;
    api.sendRaw(`{"type":"ADDED","object":{"padding":"${'x'.repeat(10_000)}`);
    await until(() => api.watchRequests().length > watches && api.openWatches === 1, 'a new watch');
    const seen = changes();
    api.add(toolhive('d', 'ns'));
    await until(() => changes() > seen, 'onChange on the new watch');
    assert.equal(snapshotOf(await reader.read(context())).items.length, 4);
  });

  it('a list page holding more JSON values than a read may is refused before it is parsed (a hostile API server)', async () => {
    // 4.1 million empty objects: 12 MiB of text, ~90 MiB of heap parsed; a 32 MiB page ~700 MiB.
    const bloated = toolhive('bloated', 'ns');
    await startApi([{ ...bloated, spec: { ...bloated.spec, padding: Array.from({ length: 4_100_000 }, () => ({})) } }]);
    const { reader } = open();
    await assert.rejects(reader.read(context()), /more than 4000000 JSON values/);
  });

  it('a malformed event drops the watch too, and the set stays right', async () => {
    await startApi([toolhive('a', 'ns')]);
    const { reader } = open();
    await reader.read(context());
    await until(() => api.openWatches === 1, 'the watch');
    const watches = api.watchRequests().length;
    api.sendRaw('this is not json\n');
    await until(() => api.watchRequests().length > watches && api.openWatches === 1, 'a new watch');
    api.sendRaw('{"type":"EXPLODED","object":{"metadata":{"name":"a"}}}\n');
    await until(() => api.watchRequests().length > watches + 1 && api.openWatches === 1, 'another new watch');
    assert.deepEqual(names(await reader.read(context())), ['com.toolhive.k8s.ns/a']);
  });

  it('reads fail once the API server has been unreachable longer than staleAfterMs (the entries stay: the source keeps its last good data)', async () => {
    await startApi([toolhive('a', 'ns')]);
    const { reader } = open({}, { staleAfterMs: 300 });
    await reader.read(context());
    await until(() => api.openWatches === 1, 'the watch');
    await api.stop();
    await until(
      () =>
        reader.read(context()).then(
          () => false,
          (err: unknown) => err instanceof SyncFailure && /^the cluster has not been followed since .*: the Kubernetes API server cannot be reached/.test(err.message),
        ),
      'a stale read',
    );
  });

  it('close() stops the watch and its connections', async () => {
    await startApi([toolhive('a', 'ns')]);
    const { reader } = open();
    await reader.read(context());
    await until(() => api.openWatches === 1, 'the watch');
    await reader.close?.();
    await until(() => api.openWatches === 0, 'the watch to end');
    const requests = api.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(api.requests.length, requests, 'nothing more is asked after close()');
    await assert.rejects(reader.read(context()), /the cluster reader is closed/);
  });
});

