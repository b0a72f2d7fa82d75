/**
 * The parts of a registry-fed group that need no network (core/vmcp/): what an entry of the
 * registry's listing becomes (registry-entries.ts: every rule, each refusal named), the backend
 * names of its servers (fed-names.ts: derived, clashes resolved whatever the order), the
 * configuration served (fed-config.ts: the claims annotation a claims filter reads), and the feed
 * (registry-feed.ts) over a source in memory: paging, change detection, a failed read keeping the
 * last good list with one warning, the bounds.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';
import type { RegistryFeedConfig, VmcpConfig } from '../../core/config/vmcp-types.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { CLAIMS_ANNOTATION, ENTRY_ANNOTATION, withFedServers } from '../../core/vmcp/fed-config.ts';
import { fedBackendName, nameFedServers } from '../../core/vmcp/fed-names.ts';
import { FeedMetrics } from '../../core/vmcp/feed-metrics.ts';
import { FedGroup } from '../../core/vmcp/fed-group.ts';
import { parseEntriesPage, readEntry, remoteUrlProblem, type FedServer } from '../../core/vmcp/registry-entries.ts';
import { jittered, RegistryFeed } from '../../core/vmcp/registry-feed.ts';
import type { RegistrySource } from '../../core/vmcp/registry-source.ts';

function entry(name: string, url: unknown, claims: unknown = { team: 'a' }, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'server', name, claims, versions: [{ version: '1.0.0', isLatest: true, server: { name, version: '1.0.0', remotes: [{ type: 'streamable-http', url }] } }], ...extra };
}

describe('an entry of the listing', () => {
  it('becomes a server: its name, the streamable-http remote of its latest version, its claims', () => {
    const raw = {
      type: 'server',
      name: 'io.github.acme/weather',
      claims: { team: 'a', org: 'acme' },
      versions: [
        { version: '2.0.0', isLatest: false, server: { name: 'io.github.acme/weather', remotes: [{ type: 'streamable-http', url: 'https://old.example.com/mcp' }] } },
        { version: '1.9.0', isLatest: true, server: { name: 'io.github.acme/weather', remotes: [{ type: 'sse', url: 'https://sse.example.com' }, { type: 'streamable-http', url: 'https://weather.example.com/mcp' }] } },
      ],
    };
    assert.deepEqual(readEntry(raw), { kind: 'server', server: { entry: 'io.github.acme/weather', url: 'https://weather.example.com/mcp', claims: { org: 'acme', team: 'a' } } });
    assert.deepEqual(readEntry(entry('io.github.acme/open', 'http://127.0.0.1:9/mcp', null)), { kind: 'server', server: { entry: 'io.github.acme/open', url: 'http://127.0.0.1:9/mcp', claims: {} } });
  });

  it('is skipped with the reason, naming it: a warning when something is wrong, a note when it only has no remote', () => {
    const skipped = (raw: unknown): [string, string, boolean] => {
      const outcome = readEntry(raw);
      assert.equal(outcome.kind, 'skipped', JSON.stringify(outcome));
      return outcome.kind === 'skipped' ? [outcome.entry, outcome.reason, outcome.warn] : ['', '', false];
    };
    assert.deepEqual(readEntry({ type: 'skill', name: 'io.github.acme/pdf' }), { kind: 'skill' });
    const packageOnly = { type: 'server', name: 'io.github.acme/npm', claims: {}, versions: [{ isLatest: true, server: { name: 'io.github.acme/npm', packages: [{ registryType: 'npm', identifier: 'x' }] } }] };
    assert.deepEqual(skipped(packageOnly).slice(1), ['its latest version has no streamable-http remote (a package alone is a server to run, which the gateway does not)', false]);
    const cases: [unknown, string, RegExp][] = [
      ['a string', '"a string"', /not an object/],
      [entry('no-slash', 'https://x.example.com'), '"no-slash"', /not a registry name/],
      [entry('io.evil/x\r\nSet-Cookie: a', 'https://x.example.com'), '"io.evil/x\\r\\nSet-Cookie: a"', /not a registry name/],
      [entry(`io.github.acme/${'a'.repeat(200)}`, 'https://x.example.com'), `"io.github.acme/${'a'.repeat(185)}…"`, /not a registry name/],
      [{ ...entry('io.github.acme/t', 'https://x.example.com'), type: 'plugin' }, 'io.github.acme/t', /type "plugin" is neither server nor skill/],
      [entry('io.github.acme/c1', 'https://x.example.com', ['team']), 'io.github.acme/c1', /claims are not an object of strings/],
      [entry('io.github.acme/c2', 'https://x.example.com', { team: 7 }), 'io.github.acme/c2', /claim "team" is not a string/],
      [entry('io.github.acme/c3', 'https://x.example.com', { 'te\nam': 'a' }), 'io.github.acme/c3', /control characters/],
      [entry('io.github.acme/c4', 'https://x.example.com', { team: 'a'.repeat(300) }), 'io.github.acme/c4', /longer than 256/],
      [entry('io.github.acme/c5', 'https://x.example.com', Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']))), 'io.github.acme/c5', /more than 32 claims/],
      [{ type: 'server', name: 'io.github.acme/v', versions: [] }, 'io.github.acme/v', /no versions/],
      [{ type: 'server', name: 'io.github.acme/d', versions: [{ isLatest: true }] }, 'io.github.acme/d', /no server document/],
      [entry('io.github.acme/n', 'https://x.example.com', {}, { versions: [{ isLatest: true, server: { name: 'io.github.other/n', remotes: [{ type: 'streamable-http', url: 'https://x.example.com' }] } }] }), 'io.github.acme/n', /named "io.github.other\/n", not as the entry/],
      [entry('io.github.acme/u', 'ftp://x.example.com'), 'io.github.acme/u', /not http or https/],
    ];
    for (const [raw, name, why] of cases) {
      const [entryName, reason, warn] = skipped(raw);
      assert.equal(entryName, name);
      assert.match(reason, why);
      assert.equal(warn, true, name);
    }
  });

  it('remote URLs: http or https, a host, no credentials, no whitespace or control characters, no {variables}, 2048 characters at most', () => {
    for (const ok of ['http://127.0.0.1:9100/mcp', 'https://mcp.example.com/v1/mcp?tenant=a', 'https://[::1]:8443/mcp']) assert.equal(remoteUrlProblem(ok), null, ok);
    const refused: [unknown, RegExp][] = [
      [undefined, /has no URL/],
      ['', /has no URL/],
      [42, /has no URL/],
      ['ftp://x.example.com/mcp', /not http or https/],
      ['javascript:alert(1)', /not http or https/],
      ['file:///etc/passwd', /not http or https/],
      ['http://user:pass@x.example.com/mcp', /carries a user name or password/],
      ['http://x.example.com/\r\nHost: evil', /control characters/],
      ['http://x.example.com/\u0000', /control characters/],
      ['http://x.example.com/a b', /whitespace/],
      ['http://x.example.com/\u00a0', /whitespace/],
      ['https://{tenant}.example.com/mcp', /template/],
      ['/relative/mcp', /not a URL/],
      [`https://x.example.com/${'a'.repeat(2048)}`, /longer than 2048/],
    ];
    for (const [url, why] of refused) assert.match(remoteUrlProblem(url) ?? 'accepted', why, JSON.stringify(url));
    assert.doesNotMatch(remoteUrlProblem('http://user:hunter2@x.example.com/') ?? '', /hunter2/, 'a credential is not echoed');
  });

  it('pages: entries and a cursor, or a RegistryAnswerError', () => {
    assert.deepEqual(parseEntriesPage({ entries: [1], metadata: { count: 1 } }), { entries: [1], nextCursor: null });
    assert.deepEqual(parseEntriesPage({ entries: [], metadata: { nextCursor: 'abc' } }), { entries: [], nextCursor: 'abc' });
    assert.deepEqual(parseEntriesPage({ entries: [] }), { entries: [], nextCursor: null });
    for (const bad of [null, [], 'x', { entries: {} }, { entries: [], metadata: 'x' }, { entries: [], metadata: { nextCursor: 5 } }, { entries: [], metadata: { nextCursor: 'a\nb' } }, { entries: [], metadata: { nextCursor: 'c'.repeat(1025) } }]) {
      assert.throws(() => parseEntriesPage(bad), { name: 'RegistryAnswerError' }, JSON.stringify(bad));
    }
  });
});

describe('backend names of a registry\'s servers', () => {
  const server = (entryName: string): FedServer => ({ entry: entryName, url: 'http://127.0.0.1:9/mcp', claims: {} });

  it('are derived from the whole entry name: lowercase letters, digits and "-", at most 63 characters', () => {
    assert.equal(fedBackendName('io.github.acme/weather'), 'io-github-acme-weather');
    assert.equal(fedBackendName('IO.GitHub.Acme/My_Server.v2'), 'io-github-acme-my-server-v2');
    assert.equal(fedBackendName('a--b/..c__'), 'a-b-c');
    const long = fedBackendName(`io.github.acme/${'x'.repeat(100)}`);
    assert.equal(long.length, 63);
    assert.match(long, /^io-github-acme-x+-[0-9a-f]{8}$/);
  });

  it('clashes: the file keeps its MCPServer\'s name, registry servers deriving one name all take a hashed form, whatever the order', () => {
    const servers = [server('io.github.acme/weather'), server('a.b/c'), server('a/b.c'), server('io.github.acme/local')];
    const first = nameFedServers(servers, new Set(['io-github-acme-local']));
    const again = nameFedServers([...servers].reverse(), new Set(['io-github-acme-local']));
    assert.deepEqual(first.servers, again.servers, 'the same names whatever order the registry lists them in');
    const names = Object.fromEntries(first.servers.map((s) => [s.entry, s.name]));
    assert.equal(names['io.github.acme/weather'], 'io-github-acme-weather');
    assert.match(names['a.b/c']!, /^a-b-c-[0-9a-f]{8}$/);
    assert.match(names['a/b.c']!, /^a-b-c-[0-9a-f]{8}$/);
    assert.notEqual(names['a.b/c'], names['a/b.c']);
    assert.match(names['io.github.acme/local']!, /^io-github-acme-local-[0-9a-f]{8}$/);
    assert.deepEqual(first.servers.map((s) => s.name), [...first.servers.map((s) => s.name)].sort(), 'in the order of their names');
    assert.equal(first.notes.length, 3);
    assert.ok(first.notes.some((n) => /"io.github.acme\/local" is named "io-github-acme-local-[0-9a-f]{8}": an MCPServer of the file is named "io-github-acme-local"/.test(n)), first.notes.join('\n'));
    assert.ok(first.notes.some((n) => /"a.b\/c" and "a\/b.c" all derive "a-b-c"/.test(n)), first.notes.join('\n'));
  });
});

const FED_YAML = `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: team}
spec: {registry: {url: "http://127.0.0.1:8080", name: default, allowedEndpointCIDRs: [127.0.0.0/8]}}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: local, annotations: {toolhive.stacklok.dev/authz-claims: '{"team":"ops"}'}}
spec: {url: "http://127.0.0.1:9100/mcp", groupRef: team}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: team, operational: {timeouts: {default: 7s}}}
  incomingAuth: {type: anonymous}
  outgoingAuth:
    source: inline
    default: {externalAuthConfigRef: {name: key}}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPExternalAuthConfig
metadata: {name: key}
spec: {type: bearerToken, bearerToken: {tokenSecretRef: {name: creds, key: token}}}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {token: t}
`;

function fedConfig(): VmcpConfig {
  const result = validateVmcpText(FED_YAML, '/tmp/fed.yaml');
  assert.ok(result.ok, JSON.stringify(!result.ok && result.problems));
  return result.config;
}

describe('the configuration a fed group serves', () => {
  it("puts the registry's servers after the file's, each with its claims as the authz-claims annotation and no credentials", () => {
    const config = fedConfig();
    const { config: served } = withFedServers(config, [
      { entry: 'io.github.acme/weather', url: 'https://weather.example.com/mcp', claims: { team: 'a', org: 'acme' } },
      { entry: 'io.github.acme/open', url: 'https://open.example.com/mcp', claims: {} },
    ]);
    assert.deepEqual(served.backends.map((b) => b.name), ['local', 'io-github-acme-open', 'io-github-acme-weather']);
    assert.equal(served.backends[0], config.backends[0], "the file's backend as it was");
    assert.equal(served.backends[0]!.externalAuth?.name, 'key');
    const weather = served.backends[2]!;
    assert.deepEqual(weather.annotations, { [ENTRY_ANNOTATION]: 'io.github.acme/weather', [CLAIMS_ANNOTATION]: '{"org":"acme","team":"a"}' });
    assert.deepEqual(JSON.parse(weather.annotations[CLAIMS_ANNOTATION]!), { org: 'acme', team: 'a' });
    assert.deepEqual(served.backends[1]!.annotations, { [ENTRY_ANNOTATION]: 'io.github.acme/open' }, 'no claims, no annotation');
    assert.deepEqual([weather.url, weather.transport, weather.timeoutMs, weather.answerTimeoutMs, weather.externalAuth], ['https://weather.example.com/mcp', { kind: 'streamable-http' }, 30_000, 7_000, null]);
    // A publisher chose its URL: the addresses spec.registry allows; the operator's own MCPServer is not guarded.
    assert.deepEqual(weather.endpointPolicy, { where: 'MCPGroup/team spec.registry', allowPrivate: false, allowedCidrs: ['127.0.0.0/8'] });
    assert.equal(served.backends[0]!.endpointPolicy, null);
    assert.equal(withFedServers({ ...config, registry: null }, [{ entry: 'a/b', url: 'https://x.example.com', claims: {} }]).config.backends.length, 1, 'no registry in the configuration: no servers of it');
  });
});

/** A registry in memory: `pages` answers each read (cursor → page), or `fail` throws. */
class MemorySource implements RegistrySource {
  readonly label = 'registry "default" (memory)';
  pages: Record<string, unknown> = {};
  fail: Error | null = null;
  asked: (string | null)[] = [];

  async page(cursor: string | null): Promise<unknown> {
    this.asked.push(cursor);
    if (this.fail !== null) throw this.fail;
    return this.pages[cursor ?? ''] ?? { entries: [] };
  }
}

function settings(overrides: Partial<RegistryFeedConfig> = {}): RegistryFeedConfig {
  return { where: 'MCPGroup/team spec.registry', url: 'http://127.0.0.1:1', name: 'default', token: null, intervalMs: 100, timeoutMs: 1_000, maxResponseBytes: 1024, maxServers: 10, backend: { timeoutMs: 30_000, answerTimeoutMs: 30_000, maxResponseBytes: 1024 }, endpoints: { where: 'MCPGroup/team spec.registry', allowPrivate: false, allowedCidrs: ['127.0.0.0/8'] }, ...overrides };
}

function feedOf(source: RegistrySource, overrides: Partial<RegistryFeedConfig> = {}) {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write(chunk: Buffer, _e, done) { for (const t of chunk.toString().split('\n')) if (t !== '') lines.push(JSON.parse(t) as Record<string, unknown>); done(); } }));
  const metrics = FeedMetrics.of(new GatewayMetrics({ processMetrics: false }).registry);
  let changes = 0;
  const feed = new RegistryFeed({ settings: settings(overrides), source, log, metrics, onChange: () => changes++ });
  return { feed, lines, metrics, changes: () => changes };
}

describe('the feed', () => {
  it('pages with the cursor, stops at the first skill, sorts by entry name, and tells a change once', async () => {
    const source = new MemorySource();
    source.pages = {
      '': { entries: [entry('io.github.b/two', 'https://two.example.com'), entry('io.github.a/one', 'https://one.example.com')], metadata: { nextCursor: 'p2' } },
      p2: { entries: [entry('io.github.c/three', 'https://three.example.com'), { type: 'skill', name: 'io.github.s/skill' }], metadata: { nextCursor: 'p3' } },
      p3: { entries: [entry('io.github.d/never', 'https://never.example.com')] },
    };
    const { feed, metrics, changes } = feedOf(source);
    await feed.first();
    assert.deepEqual(source.asked, [null, 'p2']);
    assert.deepEqual(feed.servers.map((s) => s.entry), ['io.github.a/one', 'io.github.b/two', 'io.github.c/three']);
    assert.equal(changes(), 1);
    await feed.first();
    assert.equal(changes(), 1, 'the same servers: no change');
    assert.deepEqual([metrics.reads.changed, metrics.reads.unchanged, metrics.up], [1, 1, 1]);
  });

  it('a failed read keeps the last good list, warns once per outage, and logs the return', async () => {
    const source = new MemorySource();
    source.pages = { '': { entries: [entry('io.github.a/one', 'https://one.example.com')] } };
    const { feed, lines, metrics, changes } = feedOf(source);
    await feed.first();
    source.fail = new Error('connect ECONNREFUSED');
    for (let i = 0; i < 3; i++) await feed.first();
    assert.deepEqual(feed.servers.map((s) => s.entry), ['io.github.a/one']);
    assert.equal(changes(), 1);
    assert.deepEqual([metrics.reads.failed, metrics.up], [3, 0]);
    assert.equal(lines.filter((l) => l.level === 40).length, 1);
    assert.match(String(lines.find((l) => l.level === 40)!.msg), /cannot be read \(connect ECONNREFUSED\): the last good list of its servers \(1\) keeps serving/);
    source.fail = null;
    source.pages = { '': { entries: [] } };
    await feed.first();
    assert.deepEqual(feed.servers, [], 'a good read with no servers is a change like any other');
    assert.ok(lines.some((l) => l.msg === 'the registry is read again after 3 failed reads'));
    assert.equal(metrics.up, 1);
  });

  it('bounds: more servers than maxServers, or more pages than they need, fail the read; an entry listed twice is skipped', async () => {
    const source = new MemorySource();
    source.pages = { '': { entries: Array.from({ length: 3 }, (_, i) => entry(`io.github.a/s${i}`, 'https://x.example.com')) } };
    const few = feedOf(source, { maxServers: 2 });
    await few.feed.first();
    assert.match(String(few.lines.find((l) => l.level === 40)?.reason), /more than maxServers \(2\)/);
    source.pages = { '': { entries: [], metadata: { nextCursor: 'a' } }, a: { entries: [], metadata: { nextCursor: 'b' } }, b: { entries: [], metadata: { nextCursor: 'c' } }, c: { entries: [] } };
    const endless = feedOf(source, { maxServers: 2 });
    await endless.feed.first();
    assert.match(String(endless.lines.find((l) => l.level === 40)?.reason), /goes on past 3 pages/);
    source.pages = { '': { entries: [entry('io.github.a/one', 'https://1.example.com'), entry('io.github.a/one', 'https://2.example.com'), entry('io.github.a/two', 'https://3.example.com')] } };
    const twice = feedOf(source);
    await twice.feed.first();
    assert.deepEqual(twice.feed.servers.map((s) => s.entry), ['io.github.a/two']);
    assert.match(String(twice.lines.find((l) => l.entry === 'io.github.a/one')?.msg), /registry entry "io.github.a\/one" skipped: the registry listed it twice/);
  });

  it('reads on its interval once started, and stops', async () => {
    const source = new MemorySource();
    const { feed } = feedOf(source);
    feed.start();
    await new Promise((resolve) => setTimeout(resolve, 450));
    await feed.stop();
    const reads = source.asked.length;
    assert.ok(reads >= 3 && reads <= 5, `${reads} reads in 450 ms at 100 ms ± 10 %`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    assert.equal(source.asked.length, reads, 'none after stop');
  });

  it('a change the server could not apply is told again at the next read, though the servers did not change', async () => {
    const source = new MemorySource();
    source.pages = { '': { entries: [entry('io.github.a/one', 'https://one.example.com')] } };
    let told = 0;
    const group = new FedGroup({ log: pino({ level: 'silent' }), metrics: new GatewayMetrics({ processMetrics: false }), source, onChange: () => told++ });
    await group.configure(settings({ intervalMs: 100 }));
    assert.equal(told, 1);
    assert.deepEqual(group.effective({ ...fedConfig(), registry: settings() }).backends.map((b) => b.name), ['local', 'io-github-a-one']);
    group.applyFailed();
    group.start();
    await new Promise((resolve) => setTimeout(resolve, 250));
    assert.equal(told, 2, 'told once more, then no more while nothing changes');
    await group.stop();
  });

  it('jitters each wait by ±10 %', () => {
    for (let i = 0; i < 200; i++) {
      const wait = jittered(30_000);
      assert.ok(wait >= 27_000 && wait <= 33_000, String(wait));
    }
  });
});
