/**
 * What an aggregated session keeps of its client is bounded, behind inline
 * OIDC, in front of an SDK v1 (legacy) and an SDK v2 (2026-07-28) server:
 *   - capabilities larger than `session.maxSessionSize` as JSON, in an initialize or in a modern
 *     request's `_meta`, are refused (400, -32602 naming them and the limit) before any backend
 *     is asked;
 *   - a clientInfo of any size is kept, and passed on, as its name, version and title, cut short;
 *   - one principal's sessions hold at most `session.maxSessionsSizePerPrincipal` bytes: past it
 *     its oldest end (memory and Redis storage), never another principal's;
 *   - honest clients of both generations (the official SDKs) are served as before;
 *   - of a backend's initialize answer, a session keeps what the gateway reads of its
 *     capabilities, and its instructions cut short; of its lists, at most 8 MiB (all pages).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient, textOf } from '../fixtures/client.ts';
import { waitFor } from '../fixtures/processes.ts';
import { startPaginatingServer, type PaginatingServer } from '../fixtures/paginating-server.ts';
import { startScriptedBackend, type ScriptedBackend } from '../fixtures/scripted-backend.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';
import { paddedCapabilities } from '../helpers/session-state.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { LOCAL_REDIS, openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';

const RESOURCE = 'http://127.0.0.1:4483/mcp';
const MiB = 1024 * 1024;
const HUGE = 3.5 * MiB;
const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
} as const;

const initialize = (params: Record<string, unknown>, id = 1): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'state-test', version: '1' }, ...params } });

/** A 2026-07-28 tools/call with `meta` merged into its envelope. */
function modernCall(tool: string, meta: Record<string, unknown>): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: tool, arguments: { text: 'hi' }, _meta: { [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: {}, ...meta } },
  });
  return { body, headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': tool } };
}

interface Setup {
  issuer: KeyIssuer;
  legacy: SdkServer;
  modern: Sdk2Server;
}

async function startBackends(): Promise<Setup> {
  const issuer = await KeyIssuer.start();
  await issuer.addKey('ES256');
  const legacy = await startSdkServer({ name: 'l', tools: ['echo', 'elicit', 'sample'] });
  const modern = await startSdk2Server({ name: 'm', posture: 'modern' });
  return { issuer, legacy, modern };
}

function startGateway(setup: Setup, config?: string): Promise<RunningVmcp> {
  return startTestGateway({
    backends: [{ name: 'l', url: setup.legacy.url }, { name: 'm', url: setup.modern.url }],
    incomingAuth: inlineOidcYaml({ issuer: setup.issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
    config: `operational: {failureHandling: {healthCheckInterval: 0s}}${config === undefined ? '' : ', ' + config}`,
  });
}

const bearer = async (setup: Setup, sub: string): Promise<string> => `Bearer ${await setup.issuer.mint(setup.issuer.claims(RESOURCE, { sub }))}`;
const initializesOf = (setup: Setup): number => setup.legacy.received.filter((r) => r.rpcMethods.includes('initialize')).length;

describe('what an aggregated session keeps of its client is bounded', () => {
  let setup: Setup;
  let gateway: RunningVmcp;

  before(async () => {
    setup = await startBackends();
    gateway = await startGateway(setup);
  });
  after(async () => {
    await gateway.stop();
    await setup.legacy.close();
    await setup.modern.close();
    await setup.issuer.close();
  });

  it('an initialize declaring 3.5 MiB of capabilities is refused (400, -32602, naming them and the limit); no backend is asked', async () => {
    const authorization = await bearer(setup, 'alice');
    const before = initializesOf(setup);
    const res = await post(gateway.url, initialize({ capabilities: paddedCapabilities(HUGE) }), { authorization });
    assert.equal(res.status, 400, res.text);
    const error = (res.json as { error: { code: number; message: string; data: Record<string, unknown> } }).error;
    assert.equal(error.code, -32602);
    assert.equal(error.message, 'Invalid params: params.capabilities is larger than a session keeps: more than 65536 bytes as JSON (session.maxSessionSize)');
    assert.deepEqual(error.data, { error: 'invalid_params', limit: 65536, setting: 'session.maxSessionSize' });
    assert.equal(res.headers.get('mcp-session-id'), null);
    assert.equal(initializesOf(setup), before, 'no backend was initialized');
  });

  it('capabilities just within the limit are kept, and reach the backends as declared', async () => {
    const authorization = await bearer(setup, 'alice');
    const capabilities = paddedCapabilities(60 * 1024);
    const res = await post(gateway.url, initialize({ capabilities }), { authorization });
    assert.equal(res.status, 200, res.text);
    const sent = setup.legacy.received.filter((r) => r.rpcMethods.includes('initialize')).at(-1)!;
    assert.deepEqual((sent.body as { params: { capabilities: unknown } }).params.capabilities, capabilities);
  });

  it('an initialize whose clientInfo is 3.5 MiB is served: the session keeps, and the backends get, its name, version and title cut to 256 characters', async () => {
    const authorization = await bearer(setup, 'alice');
    const name = 'n'.repeat(HUGE / 2);
    const res = await post(gateway.url, initialize({ clientInfo: { name, version: '1.0', title: 'é'.repeat(300), icons: [{ src: 'x'.repeat(HUGE / 2) }] } }), { authorization });
    assert.equal(res.status, 200, res.text);
    const sent = setup.legacy.received.filter((r) => r.rpcMethods.includes('initialize')).at(-1)!;
    assert.ok(sent.text.length < 2048, `the backend's initialize is ${sent.text.length} bytes`);
    assert.deepEqual((sent.body as { params: { clientInfo: unknown } }).params.clientInfo, { name: name.slice(0, 256), version: '1.0', title: 'é'.repeat(256) });
    // A legacy client's session speaks for it to the modern backend, with what it kept.
    const session = res.headers.get('mcp-session-id')!;
    const headers = { authorization, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await post(gateway.url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers);
    const called = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'm_echo', arguments: { text: 'hi' } } }), headers);
    assert.equal(called.status, 200, called.text);
    const toModern = setup.modern.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'tools/call').at(-1)!;
    const meta = (toModern.body as { params: { _meta: Record<string, unknown> } }).params._meta;
    assert.deepEqual(meta[META.clientInfo], { name: name.slice(0, 256), version: '1.0', title: 'é'.repeat(256) });
  });

  it('a 2026-07-28 request declaring 3.5 MiB of clientCapabilities is refused (400, -32602, naming them and the limit); nothing reaches a backend', async () => {
    const authorization = await bearer(setup, 'alice');
    const [legacyBefore, modernBefore] = [setup.legacy.received.length, setup.modern.requests.length];
    const { body, headers } = modernCall('m_echo', { [META.clientCapabilities]: paddedCapabilities(HUGE) });
    const res = await post(gateway.url, body, { authorization, ...headers });
    assert.equal(res.status, 400, res.text);
    const error = (res.json as { error: { code: number; message: string } }).error;
    assert.equal(error.code, -32602);
    assert.equal(error.message, `Invalid params: _meta["${META.clientCapabilities}"] is larger than a session keeps: more than 65536 bytes as JSON (session.maxSessionSize)`);
    assert.equal(setup.legacy.received.length, legacyBefore, 'the legacy backend was not asked');
    assert.equal(setup.modern.requests.length, modernBefore, 'the modern backend was not asked');
  });

  it('a 2026-07-28 request asking for a log level MCP does not have (3.5 MiB of it) is refused (400, -32602); nothing reaches a backend', async () => {
    const authorization = await bearer(setup, 'alice');
    const [legacyBefore, modernBefore] = [setup.legacy.received.length, setup.modern.requests.length];
    // A list goes to every modern backend, with the request's envelope.
    const body = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: { [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: {}, 'io.modelcontextprotocol/logLevel': 'v'.repeat(HUGE) } } });
    const res = await post(gateway.url, body, { authorization, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    assert.equal(res.status, 400, res.text.slice(0, 300));
    const error = (res.json as { error: { code: number; message: string } }).error;
    assert.equal(error.code, -32602);
    assert.equal(error.message, 'Invalid params: _meta["io.modelcontextprotocol/logLevel"] must be one of debug, info, notice, warning, error, critical, alert, emergency');
    assert.equal(setup.legacy.received.length, legacyBefore, 'the legacy backend was not asked');
    assert.equal(setup.modern.requests.length, modernBefore, 'the modern backend was not asked');
  });

  it('a 2026-07-28 request whose clientInfo is 3.5 MiB: its implicit session and both backends get name, version and title cut short', async () => {
    const authorization = await bearer(setup, 'carol');
    const clientInfo = { name: 'c'.repeat(HUGE), version: '2' };
    for (const tool of ['l_echo', 'm_echo']) {
      const { body, headers } = modernCall(tool, { [META.clientInfo]: clientInfo });
      const res = await post(gateway.url, body, { authorization, ...headers });
      assert.equal(res.status, 200, res.text);
      assert.match(res.text, /: hi/);
    }
    const opened = setup.legacy.received.filter((r) => r.rpcMethods.includes('initialize')).at(-1)!;
    assert.deepEqual((opened.body as { params: { clientInfo: unknown } }).params.clientInfo, { name: 'c'.repeat(256), version: '2' });
    const toModern = setup.modern.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'tools/call').at(-1)!;
    assert.deepEqual((toModern.body as { params: { _meta: Record<string, unknown> } }).params._meta[META.clientInfo], { name: 'c'.repeat(256), version: '2' });
  });

  it("a legacy client's resource subscriptions on a modern backend are kept within maxSessionSize (their URIs in all); past it -32602 names the limit", async () => {
    // A modern backend takes subscriptions in its listen, so the session keeps them, and sends them all each time one is added.
    const authorization = await bearer(setup, 'erin');
    const res = await post(gateway.url, initialize({}), { authorization });
    assert.equal(res.status, 200, res.text);
    const headers = { authorization, 'mcp-session-id': res.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await post(gateway.url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers);
    const subscription = async (method: 'resources/subscribe' | 'resources/unsubscribe', path: string, id: number): Promise<{ result?: unknown; error?: { code: number; message: string } }> => {
      const answer = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id, method, params: { uri: `fixture://m/files/${path}` } }), headers);
      assert.equal(answer.status, 200, answer.text.slice(0, 300));
      return answer.json as { result?: unknown; error?: { code: number; message: string } };
    };
    // URIs as long as a template lookup takes (4,000 characters): 16 fit in 64 KiB, the 17th does not.
    const path = (i: number): string => `${String(i).padStart(2, '0')}/${'p'.repeat(4000 - 'fixture://m/files/00/'.length)}`;
    for (let i = 0; i < 16; i++) assert.deepEqual((await subscription('resources/subscribe', path(i), 10 + i)).result, {}, `subscription ${i}`);
    const refused = await subscription('resources/subscribe', path(16), 30);
    assert.deepEqual(refused.error, { code: -32602, message: 'Invalid params: a session keeps at most 65536 bytes of resource subscriptions (their URIs, session.maxSessionSize): unsubscribe one first' });
    // Within the bound again once one is gone; one subscribed twice counts once.
    assert.deepEqual((await subscription('resources/unsubscribe', path(0), 31)).result, {});
    assert.deepEqual((await subscription('resources/subscribe', path(16), 32)).result, {});
    assert.deepEqual((await subscription('resources/subscribe', path(16), 33)).result, {});
  });

  it('official SDK clients of both generations are served as before, with the capabilities they declare', async () => {
    const authorization = await bearer(setup, 'dave');
    const v1 = await connectClient(gateway.url, { headers: { authorization }, capabilities: { sampling: true, elicitation: true, roots: true }, waitForStandaloneStream: false });
    try {
      const names = (await v1.client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('l_echo') && names.includes('m_echo'), names.join());
      assert.equal(textOf(await v1.client.callTool({ name: 'l_echo', arguments: { text: 'v1' } })), 'l: v1');
      assert.match(textOf(await v1.client.callTool({ name: 'l_sample', arguments: { prompt: 'bounded' } })), /sampled: bounded/);
    } finally {
      await v1.close();
    }
    const v2 = new ModernClient({ name: 'modern-client', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } as never } });
    await v2.connect(new ModernTransport(new URL(gateway.url), { requestInit: { headers: { authorization } } }));
    try {
      assert.equal(v2.getProtocolEra(), 'modern');
      const names = (await v2.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('l_echo') && names.includes('m_echo'), names.join());
      for (const tool of ['l_echo', 'm_echo']) {
        const result = (await v2.callTool({ name: tool, arguments: { text: 'v2' } })) as { content: { text: string }[] };
        assert.equal(result.content[0]!.text, `${tool[0]}: v2`);
      }
    } finally {
      await v2.close();
    }
  });
});

/** 60 sessions of one principal declaring `declared` bytes each, and what is left of them. */
async function sixtySessions(gateway: RunningVmcp, setup: Setup, budget: number): Promise<void> {
  const [alice, bob] = [await bearer(setup, 'alice'), await bearer(setup, 'bob')];
  const listsFor = async (authorization: string, session: string): Promise<number> =>
    (await post(gateway.url, '{"jsonrpc":"2.0","id":9,"method":"tools/list"}', { authorization, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' })).status;
  const bobs = (await post(gateway.url, initialize({}), { authorization: bob })).headers.get('mcp-session-id')!;
  assert.equal(await listsFor(bob, bobs), 200);
  const deletesBefore = setup.legacy.received.filter((r) => r.method === 'DELETE').length;

  const declared = 60 * 1024;
  const body = initialize({ capabilities: paddedCapabilities(declared) });
  const sessions: string[] = [];
  for (let i = 0; i < 60; i++) {
    const res = await post(gateway.url, body, { authorization: alice });
    assert.equal(res.status, 200, `session ${i}: ${res.text.slice(0, 300)}`);
    sessions.push(res.headers.get('mcp-session-id')!);
  }
  const live: string[] = [];
  for (const session of sessions) if ((await listsFor(alice, session)) === 200) live.push(session);
  // Each record holds the 60 KiB declared and a few hundred bytes more.
  assert.ok(live.length >= 1 && live.length * declared <= budget, `${live.length} of alice's sessions live on`);
  assert.equal(live.length, Math.floor(budget / (declared + 1024)), 'as many as the budget holds');
  assert.deepEqual(live, sessions.slice(-live.length), 'the newest ones');
  assert.equal(await listsFor(bob, bobs), 200, 'bob\'s session lives on');
  await waitFor(() => setup.legacy.received.filter((r) => r.method === 'DELETE').length >= deletesBefore + 60 - live.length, 5_000);
}

describe('one principal\'s sessions hold at most maxSessionsSizePerPrincipal bytes', () => {
  let setup: Setup;
  before(async () => {
    setup = await startBackends();
  });
  after(async () => {
    await setup.legacy.close();
    await setup.modern.close();
    await setup.issuer.close();
  });

  it('memory storage: 60 sessions of 60 KiB each, the oldest end past the default 1 MiB; another principal is untouched', async () => {
    const gateway = await startGateway(setup);
    try {
      await sixtySessions(gateway, setup, MiB);
    } finally {
      await gateway.stop();
    }
  });

  it('Redis storage: the same, the bound held in Redis', async (t) => {
    const opened = await openLocalRedis();
    if ('skip' in opened) return t.skip(opened.skip);
    const redis: LocalRedis = opened;
    const gateway = await startGateway(setup, `session: {maxSessionsSizePerPrincipal: 512Ki, storage: {type: redis, redis: {addr: "${LOCAL_REDIS}", keyPrefix: "${redis.keyPrefix}"}}}`);
    try {
      await sixtySessions(gateway, setup, 512 * 1024);
      let stored = 0;
      for (const key of await redis.admin.keys(`${redis.keyPrefix}vmcp:session:*`)) stored += await redis.admin.strlen(key);
      assert.ok(stored <= 512 * 1024 + 4096, `${stored} bytes of sessions in Redis (alice's within the budget, and bob's)`);
    } finally {
      await gateway.stop();
      await redis.cleanup();
    }
  });
});

describe('what an aggregated session keeps of its backends is bounded', () => {
  let big: ScriptedBackend;
  let legacy: SdkServer;
  let pages: PaginatingServer;
  let gateway: RunningVmcp;

  before(async () => {
    big = await startScriptedBackend('big');
    // What a backend could answer within the answer cap: megabytes of capabilities and instructions.
    big.initializeResult = {
      protocolVersion: '2025-11-25',
      capabilities: { tools: { listChanged: true, pad: 'x'.repeat(HUGE) }, tasks: { requests: { tools: { call: {} } } }, experimental: paddedCapabilities(HUGE) },
      serverInfo: { name: 'big', version: '1' },
      instructions: 'i'.repeat(HUGE),
    };
    legacy = await startSdkServer({ name: 'l', tools: ['echo'] });
    // Twelve tools of 1 MiB each, two per page: 12 MiB of list that every session would cache.
    pages = await startPaginatingServer({ name: 'pages', tools: 12, pageSize: 2, padding: MiB });
    gateway = await startTestGateway({
      backends: [{ name: 'big', url: big.url }, { name: 'l', url: legacy.url }, { name: 'pages', url: pages.url }],
      config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
  });
  after(async () => {
    await gateway.stop();
    await big.close();
    await legacy.close();
    await pages.close();
  });

  it('a backend answering initialize with 3.5 MiB of capabilities and instructions: the session keeps what the gateway reads, the instructions cut to 16 Ki characters', async () => {
    const res = await post(gateway.url, initialize({}));
    assert.equal(res.status, 200, res.text.slice(0, 300));
    assert.ok(res.text.length < 20_000, `the initialize answer is ${res.text.length} bytes`);
    const result = (res.json as { result: { capabilities: Record<string, unknown>; instructions: string } }).result;
    assert.deepEqual(result.capabilities['tasks'], { requests: { tools: { call: {} } } }, 'a small tasks capability is passed on');
    assert.equal(result.capabilities['experimental'], undefined, 'an oversize experimental one is not');
    assert.ok(result.instructions.includes('## big\n' + 'i'.repeat(16 * 1024)) && !result.instructions.includes('i'.repeat(16 * 1024 + 1)));
    const session = res.headers.get('mcp-session-id')!;
    const listed = await post(gateway.url, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    assert.deepEqual(((listed.json as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name)).sort(), ['big_run', 'l_echo']);
  });

  it('a backend listing more than 8 MiB of tools over its pages: its list is left out, named, and its tools say why; the others are served', async () => {
    const res = await post(gateway.url, initialize({}));
    const headers = { 'mcp-session-id': res.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const listed = await post(gateway.url, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', headers);
    assert.equal(listed.status, 200);
    assert.ok(listed.text.length < 100_000, `the list is ${listed.text.length} bytes`);
    assert.deepEqual(((listed.json as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name)).sort(), ['big_run', 'l_echo']);
    const called = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'pages_tool_000', arguments: {} } }), headers);
    assert.equal((called.json as { error: { message: string } }).error.message, 'tool pages_tool_000 cannot be called now: backend "pages" listed more than 8388608 bytes of tools (as JSON, in 4 pages)');
    const echoed = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'l_echo', arguments: { text: 'still' } } }), headers);
    assert.match(echoed.text, /l: still/);
  });
});
