/**
 * How a registry-fed group reads its registry (core/vmcp/registry-source.ts, registry-feed.ts,
 * registry-entries.ts), with the gateway in the test process over real sockets:
 *
 * - the registry's own rules apply to the gateway's reading: under full authorization its token
 *   needs the manageRegistries role and the registry's claims, and it sees the entries its claims
 *   hold; each entry's claims become the backend's `toolhive.stacklok.dev/authz-claims`
 *   annotation; the same through a registry in the same process (plugins/registry/in-process-source.ts);
 * - a hostile registry: answers too large, not JSON, not a listing, error statuses, redirects,
 *   answers that never come, more servers than allowed, a cursor that never ends are refused
 *   without a crash and the last good list keeps serving; entries with refused URLs, names with
 *   CR/LF, unreadable claims are skipped with a warning naming the entry while the others serve.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino, { type Logger } from 'pino';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { startVmcp, type RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import type { RegistrySource } from '../../core/vmcp/registry-source.ts';
import { VmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { inProcessRegistrySource } from '../../plugins/registry/in-process-source.ts';
import { textOf, withClient } from '../fixtures/client.ts';
import { waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { writeConfig } from '../helpers/gateway.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { startIssuer, type TestIssuer } from '../registry/helpers/issuer.ts';
import { startTestRegistry, type TestRegistry } from '../registry/helpers/registry.ts';

type Line = Record<string, unknown>;
const CLAIMS = 'toolhive.stacklok.dev/authz-claims';

function capturingLogger(): { log: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n')) if (text.trim() !== '') lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

/**
 * A gateway whose group `team` is fed by `registry` (YAML lines under spec.registry), and nothing
 * else. The test's backends are on loopback, which only allowedEndpointCIDRs allows.
 */
async function startFedGateway(registry: string, options: { log: Logger; token?: string; source?: RegistrySource; incomingAuth?: string }): Promise<RunningVmcp> {
  const secret = options.token === undefined ? '' : `---\napiVersion: v1\nkind: Secret\nmetadata: {name: reader}\nstringData: {token: "${options.token}"}\n`;
  const file = await writeConfig(`apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: team}
spec:
  registry:
${registry.replace(/^/gm, '    ')}
    allowedEndpointCIDRs: [127.0.0.0/8]${options.token === undefined ? '' : '\n    tokenSecretRef: {name: reader, key: token}'}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: fed}
spec:
  config: {groupRef: team}
${options.incomingAuth ?? '  incomingAuth: {type: anonymous}'}
${secret}`);
  const config = await loadVmcpConfig(file);
  return startVmcp({ config, port: 0, log: options.log, builtins: new VmcpBuiltins().for(config), ...(options.source === undefined ? {} : { registrySource: options.source }) });
}

const toolNames = (running: RunningVmcp): Promise<string[]> => withClient(running.url, {}, async (c) => (await c.client.listTools()).tools.map((t) => t.name).sort());

function serverBody(name: string, url: string, claims: Record<string, string>): Record<string, unknown> {
  return { name, version: '1.0.0', description: `${name} for the test`, remotes: [{ type: 'streamable-http', url }], claims };
}

describe('reading a registry under full authorization', () => {
  let issuer: TestIssuer;
  let registry: TestRegistry;
  let alpha: SdkServer;
  let beta: SdkServer;
  const gateways: RunningVmcp[] = [];

  before(async () => {
    issuer = await startIssuer('registry');
    [alpha, beta] = await Promise.all([startSdkServer({ name: 'alpha', tools: ['echo'] }), startSdkServer({ name: 'beta', tools: ['echo'] })]);
    registry = await startTestRegistry(`auth:
  mode: oauth
  oauth:
    resourceUrl: http://127.0.0.1/registry
    providers: [{name: test, issuerUrl: "${issuer.url}", audience: registry}]
  authz:
    roles:
      superAdmin: [{role: admin}]
      manageRegistries: [{role: gateway}]
      manageEntries: [{role: publisher}]
sources: [{name: internal, managed: {}, claims: {org: acme}}]
registries: [{name: default, sources: [internal], claims: {org: acme}}]
database: {type: memory}
`);
    const publisher = await issuer.token({ org: 'acme', team: ['a', 'b'], role: 'publisher' });
    for (const [name, url, team] of [['io.github.acme/alpha', alpha.url, 'a'], ['io.github.acme/beta', beta.url, 'b']] as const) {
      const res = await registry.request('POST', '/default/v0.1/publish', { token: publisher, body: serverBody(name, url, { org: 'acme', team }) });
      assert.equal(res.status, 201, res.text);
    }
  });
  after(async () => {
    for (const gateway of gateways) await gateway.stop();
    await registry.stop();
    await Promise.all([alpha.close(), beta.close(), issuer.close()]);
  });

  const settings = (): string => `url: ${registry.url}\nname: default\nsyncPolicy: {interval: 200ms}\ntimeout: 2s`;

  it("serves the entries the token's claims see, each with its claims as the backend's authz-claims annotation", async () => {
    const token = await issuer.token({ org: 'acme', team: 'a', role: 'gateway' });
    const gateway = await startFedGateway(settings(), { log: capturingLogger().log, token });
    gateways.push(gateway);
    assert.deepEqual(gateway.backends.map((b) => b.name), ['io-github-acme-alpha']);
    const backend = gateway.backends[0]!;
    assert.equal(backend.annotations[CLAIMS], '{"org":"acme","team":"a"}');
    assert.deepEqual(JSON.parse(backend.annotations[CLAIMS]!), { org: 'acme', team: 'a' });
    assert.equal(backend.annotations['gatehouse.dev/registry-entry'], 'io.github.acme/alpha');
    assert.equal(backend.auth, null, "a registry's server gets no outgoing credentials");
    assert.deepEqual(await toolNames(gateway), ['io-github-acme-alpha_echo']);
  });

  it('a token without the manageRegistries role, or outside the registry\'s claims, reads nothing, and the log says why', async () => {
    for (const [claims, why] of [
      [{ org: 'acme', team: 'a' }, /answered 403: "insufficient_permissions".*\(the token needs the manageRegistries role, or superAdmin\)/],
      [{ org: 'other', role: 'gateway' }, /answered 404: "not_found".*\(no such registry, or the token does not satisfy its claims\)/],
    ] as const) {
      const captured = capturingLogger();
      const gateway = await startFedGateway(settings(), { log: captured.log, token: await issuer.token(claims) });
      gateways.push(gateway);
      assert.deepEqual(gateway.backends, []);
      const warning = captured.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('the registry cannot be read'));
      assert.match(String(warning?.msg), why);
      assert.deepEqual(await toolNames(gateway), [], 'an empty group still serves (aggregated, no tools)');
    }
  });

  it('reads the same through a registry in the same process, by the claims it is given', async () => {
    const source = inProcessRegistrySource(registry, { registry: 'default', claims: { org: 'acme', team: ['a', 'b'] } });
    const gateway = await startFedGateway(settings(), { log: capturingLogger().log, source });
    gateways.push(gateway);
    assert.deepEqual(gateway.backends.map((b) => [b.name, b.annotations[CLAIMS]]), [
      ['io-github-acme-alpha', '{"org":"acme","team":"a"}'],
      ['io-github-acme-beta', '{"org":"acme","team":"b"}'],
    ]);
    assert.match(textOf(await withClient(gateway.url, {}, (c) => c.client.callTool({ name: 'io-github-acme-beta_echo', arguments: { text: 'in process' } }))), /beta: in process/);
  });

  it("per caller, through the claims filter: each sees the registry's servers its token's claims hold, and a server published for one team appears for that team only", async () => {
    const users = await KeyIssuer.start();
    await users.addKey('ES256');
    const resource = 'http://127.0.0.1:4483/mcp';
    const gateway = await startFedGateway(settings(), {
      log: capturingLogger().log,
      token: await issuer.token({ org: 'acme', team: ['a', 'b'], role: 'gateway' }),
      incomingAuth: inlineOidcYaml({ issuer: users.url, audience: resource, resourceUrl: resource }),
    });
    gateways.push(gateway);
    const toolsOf = async (claims: Record<string, unknown>): Promise<string[]> => {
      const authorization = `Bearer ${await users.mint(users.claims(resource, claims))}`;
      return withClient(gateway.url, { headers: { authorization } }, async (c) => (await c.client.listTools()).tools.map((t) => t.name).sort());
    };
    const ann = { sub: 'ann', org: 'acme', team: 'a' };
    const bob = { sub: 'bob', org: 'acme', team: 'b' };
    assert.deepEqual(await toolsOf(ann), ['io-github-acme-alpha_echo']);
    assert.deepEqual(await toolsOf(bob), ['io-github-acme-beta_echo']);
    assert.deepEqual(await toolsOf({ sub: 'eve', org: 'acme' }), []);
    const gamma = await startSdkServer({ name: 'gamma', tools: ['echo'] });
    const publisher = await issuer.token({ org: 'acme', team: ['a', 'b'], role: 'publisher' });
    try {
      const published = await registry.request('POST', '/default/v0.1/publish', { token: publisher, body: serverBody('io.github.acme/gamma', gamma.url, { org: 'acme', team: 'a' }) });
      assert.equal(published.status, 201, published.text);
      await waitFor(() => gateway.backends.some((b) => b.name === 'io-github-acme-gamma'), 5_000, 20);
      assert.deepEqual(await toolsOf(ann), ['io-github-acme-alpha_echo', 'io-github-acme-gamma_echo']);
      assert.deepEqual(await toolsOf(bob), ['io-github-acme-beta_echo']);
    } finally {
      await registry.request('DELETE', `/default/v0.1/servers/${encodeURIComponent('io.github.acme/gamma')}/versions/1.0.0`, { token: publisher });
      await gamma.close();
      await users.close();
    }
  });
});

describe('reloads of the file of a fed group', () => {
  let registry: TestRegistry;
  let alpha: SdkServer;
  let local: SdkServer;

  before(async () => {
    [alpha, local] = await Promise.all([startSdkServer({ name: 'alpha', tools: ['echo'] }), startSdkServer({ name: 'local', tools: ['echo'] })]);
    registry = await startTestRegistry('auth: {mode: anonymous}\nsources: [{name: internal, managed: {}}]\nregistries: [{name: default, sources: [internal]}, {name: other, sources: [internal]}]\ndatabase: {type: memory}\n');
    const res = await registry.request('POST', '/default/v0.1/publish', { body: serverBody('io.github.test/alpha', alpha.url, { team: 'a' }) });
    assert.equal(res.status, 201, res.text);
  });
  after(async () => {
    await registry.stop();
    await Promise.all([alpha.close(), local.close()]);
  });

  /** The file: the group fed by registry `name` (none: no spec.registry), with an MCPServer named `server` when given. */
  async function fileConfig(name: string | null, server?: string) {
    const registryBlock = name === null ? '' : `\nspec:\n  registry: {url: "${registry.url}", name: ${name}, syncPolicy: {interval: 200ms}, allowedEndpointCIDRs: [127.0.0.0/8]}`;
    const servers = server === undefined ? '' : `---\napiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: ${server}}\nspec: {url: "${local.url}", groupRef: team}\n`;
    const file = await writeConfig(`apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: team}${registryBlock}\n${servers}---\napiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer\nmetadata: {name: fed}\nspec:\n  config: {groupRef: team}\n  incomingAuth: {type: anonymous}\n`);
    return loadVmcpConfig(file);
  }

  it("keep the registry's servers; a clash with the file's MCPServer is resolved and logged; another registry, or none, drops them", async () => {
    const captured = capturingLogger();
    const builtins = new VmcpBuiltins();
    const first = await fileConfig('default');
    const gateway = await startVmcp({ config: first, port: 0, log: captured.log, builtins: builtins.for(first) });
    try {
      assert.deepEqual(gateway.backends.map((b) => b.name), ['io-github-test-alpha']);
      // The file gains an MCPServer named as the registry's server derives: the file's keeps the name.
      const clash = await fileConfig('default', 'io-github-test-alpha');
      const outcome = await gateway.reload(clash, builtins.for(clash));
      assert.equal(outcome.status, 'applied');
      const names = gateway.backends.map((b) => b.name);
      assert.equal(names[0], 'io-github-test-alpha');
      assert.equal(gateway.backends[0]!.url.href, local.url, "the file's server keeps its name");
      assert.match(names[1]!, /^io-github-test-alpha-[0-9a-f]{8}$/);
      assert.equal(gateway.backends[1]!.annotations[CLAIMS], '{"team":"a"}');
      assert.ok(captured.lines.some((l) => /registry server "io.github.test\/alpha" is named "io-github-test-alpha-[0-9a-f]{8}": an MCPServer of the file is named "io-github-test-alpha"/.test(String(l.msg))));
      assert.deepEqual(await toolNames(gateway), [`${names[1]}_echo`, 'io-github-test-alpha_echo'].sort());
      // Another registry (empty): the servers of the first leave at once.
      const other = await fileConfig('other', 'local');
      assert.equal((await gateway.reload(other, builtins.for(other))).status, 'applied');
      assert.deepEqual(gateway.backends.map((b) => b.name), ['local']);
      // Back to the first: its servers return at its first read.
      const back = await fileConfig('default', 'local');
      await gateway.reload(back, builtins.for(back));
      await waitFor(() => gateway.backends.length === 2, 5_000, 20);
      assert.deepEqual(gateway.backends.map((b) => b.name), ['local', 'io-github-test-alpha']);
      // No registry: its servers leave, and the group of one is served transparently again.
      const none = await fileConfig(null, 'local');
      assert.equal((await gateway.reload(none, builtins.for(none))).status, 'applied');
      assert.deepEqual(gateway.backends.map((b) => b.name), ['local']);
      assert.deepEqual(await toolNames(gateway), ['echo']);
    } finally {
      await gateway.stop();
    }
  });
  it('a registrySource given in code needs spec.registry in the file (how often, and what its servers get)', async () => {
    const config = await fileConfig(null, 'local');
    const source = inProcessRegistrySource(registry, { registry: 'default' });
    await assert.rejects(startVmcp({ config, port: 0, log: capturingLogger().log, registrySource: source }), {
      name: 'StartupError',
      message: /^startVmcp was given a registrySource, but MCPGroup\/team has no spec\.registry/,
    });
  });
});

/** A registry that answers what the test says, and counts the requests. */
class FakeRegistry {
  answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(500).end();
  requests = 0;
  readonly #server: Server;
  url = '';

  constructor() {
    this.#server = createServer((req, res) => {
      this.requests++;
      this.answer(req, res);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  json(body: unknown): void {
    this.answer = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

function entry(name: string, url: unknown, claims: unknown = { team: 'a' }): Record<string, unknown> {
  return { type: 'server', name, source: 'internal', claims, versions: [{ version: '1.0.0', isLatest: true, server: { name, version: '1.0.0', remotes: [{ type: 'streamable-http', url }] } }] };
}

describe('a hostile registry', () => {
  let fake: FakeRegistry;
  let alpha: SdkServer;
  let gateway: RunningVmcp;
  let captured: ReturnType<typeof capturingLogger>;
  const good = (): Record<string, unknown> => ({ entries: [entry('io.github.test/alpha', alpha.url)], metadata: { count: 1 } });

  before(async () => {
    fake = new FakeRegistry();
    await fake.start();
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo'] });
    fake.json(good());
    captured = capturingLogger();
    gateway = await startFedGateway(`url: ${fake.url}\nname: default\nsyncPolicy: {interval: 100ms}\ntimeout: 1s\nmaxResponseSize: 64Ki\nmaxServers: 12`, { log: captured.log });
  });
  after(async () => {
    await gateway.stop();
    await Promise.all([fake.close(), alpha.close()]);
  });

  const messages = (): string[] => captured.lines.map((l) => String(l.msg));
  /** Waits for two more reads of the registry (so at least one read whole with the answer now set). */
  const twoReads = async (): Promise<void> => {
    const from = fake.requests;
    await waitFor(() => fake.requests >= from + 2, 10_000, 20);
  };

  it('refuses whole answers it cannot trust, keeps the last good list, and warns once per outage', async () => {
    assert.deepEqual(await toolNames(gateway), ['io-github-test-alpha_echo']);
    const huge = JSON.stringify({ entries: [], metadata: { count: 0 }, padding: 'x'.repeat(70 * 1024) });
    const cases: [string, (req: IncomingMessage, res: ServerResponse) => void, RegExp][] = [
      ['oversize, declared', (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(huge), /over maxResponseSize/],
      ['oversize, chunked', (_q, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write(huge.slice(0, 40_000)); res.end(huge.slice(40_000)); }, /over maxResponseSize/],
      ['not JSON', (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"entries": [oops'), /not JSON/],
      ['not a listing', (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"entries": "all of them"}'), /not an entry listing/],
      ['a bad cursor', (_q, res) => res.writeHead(200).end(JSON.stringify({ entries: [], metadata: { nextCursor: 'a\r\nb' } })), /nextCursor/],
      ['an error status', (_q, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom\\r\\nX-Injected: 1","error_description":"down"}'), /answered 500: "boom\\r\\nX-Injected: 1" "down"/],
      ['a redirect', (_q, res) => res.writeHead(302, { location: 'http://198.51.100.7/steal' }).end(), /redirected to "http:\/\/198\.51\.100\.7\/steal", not followed/],
      ['no answer in time', () => undefined, /took longer than timeout \(1000 ms\)/],
      ['more servers than maxServers', (_q, res) => res.writeHead(200).end(JSON.stringify({ entries: Array.from({ length: 13 }, (_, i) => entry(`io.github.test/s${i}`, alpha.url)) })), /more than maxServers \(12\)/],
      ['a cursor that never ends', (_q, res) => res.writeHead(200).end(JSON.stringify({ entries: [], metadata: { nextCursor: String(Math.random()) } })), /goes on past 3 pages/],
    ];
    for (const [what, answer, reason] of cases) {
      const before = captured.lines.length;
      fake.answer = answer;
      await twoReads();
      // Two requests are not two reads: a read of pages makes several (the endless cursor, 4), and
      // one may fail only after the two requests, so the reason is waited for, not assumed there.
      await waitFor(() => captured.lines.slice(before).some((l) => reason.test(String(l.reason))), 10_000, 20).catch(() => undefined);
      const reasons = captured.lines.slice(before).map((l) => String(l.reason ?? ''));
      assert.ok(reasons.some((r) => reason.test(r)), `${what}: ${JSON.stringify(reasons)}`);
      assert.deepEqual(gateway.backends.map((b) => b.name), ['io-github-test-alpha'], `${what}: the last good list serves`);
      // Back to a good answer: the outage ends, and the next one is warned of again.
      fake.json(good());
      await waitFor(() => captured.lines.slice(before).some((l) => /^the registry is read again/.test(String(l.msg))), 10_000, 20);
      const warnings = captured.lines.slice(before).filter((l) => String(l.msg).startsWith('the registry cannot be read'));
      assert.equal(warnings.length, 1, `${what}: one warning for the outage`);
    }
    assert.match(textOf(await withClient(gateway.url, {}, (c) => c.client.callTool({ name: 'io-github-test-alpha_echo', arguments: { text: 'alive' } }))), /alpha: alive/);
  });

  it('skips entries whose remote, name or claims are refused, naming each once, and serves the others', async () => {
    const before = captured.lines.length;
    fake.json({
      entries: [
        entry('io.github.test/alpha', alpha.url),
        entry('io.github.test/ftp', 'ftp://127.0.0.1/mcp'),
        entry('io.github.test/creds', 'http://user:secret@127.0.0.1/mcp'),
        entry('io.github.test/crlf', `${alpha.url}\r\nX-Injected: 1`),
        entry('io.github.test/nul', `${alpha.url}\u0000`),
        entry('io.github.test/template', 'https://{tenant}.example.com/mcp'),
        entry('io.github.test/relative', '/mcp'),
        entry('io.github.test/long', `https://example.com/${'a'.repeat(2100)}`),
        entry('io.github.test/bad-claims', alpha.url, { team: ['a'] }),
        entry('io.evil/x\r\nInjected: 1', alpha.url),
      ],
    });
    const expected: [string, RegExp][] = [
      ['io.github.test/ftp', /is not http or https/],
      ['io.github.test/creds', /carries a user name or password/],
      ['io.github.test/crlf', /control characters/],
      ['io.github.test/nul', /control characters/],
      ['io.github.test/template', /template with \{variables\}/],
      ['io.github.test/relative', /is not a URL/],
      ['io.github.test/long', /longer than 2048 characters/],
      ['io.github.test/bad-claims', /claim "team" is not a string/],
      ['"io.evil/x\\r\\nInjected: 1"', /is not a registry name/],
    ];
    await waitFor(() => captured.lines.slice(before).filter((l) => String(l.msg).startsWith('registry entry ')).length >= expected.length, 10_000, 20);
    await twoReads();
    const skips = captured.lines.slice(before).filter((l) => String(l.msg).startsWith('registry entry '));
    assert.equal(skips.length, expected.length, `each skipped entry is logged once: ${JSON.stringify(skips.map((l) => l.msg))}`);
    for (const [name, why] of expected) {
      const line = skips.find((l) => l.entry === name);
      assert.ok(line !== undefined && line.level === 40 && why.test(String(line.reason)), `${name}: ${JSON.stringify(line)}`);
    }
    assert.ok(skips.every((l) => !String(l.msg).includes('\r') && !String(l.msg).includes('secret')), 'no raw CR/LF and no credential in a message');
    assert.deepEqual(gateway.backends.map((b) => b.name), ['io-github-test-alpha']);
    assert.ok(!messages().some((m) => /uncaught|unhandled/i.test(m)));
  });
});
