/**
 * Plugin views (per-user tool policy) through a running gateway: what one caller may not see is
 * left out of every list before paging (no short pages), and a call of it is answered exactly as
 * a call of what does not exist; a view's admit step refuses a call by its arguments; answers
 * name only backends the caller may know. Aggregated and transparent (one backend), legacy
 * clients (the official SDK) and modern ones (2026-07-28, raw requests).
 *
 * The views here are a test plugin's (a caller named by a header, a fixed rule), so that the
 * core's part is what is tested; the claims filter and Cedar plugins have their own tests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectClient, withClient } from '../fixtures/client.ts';
import { startPaginatingServer, type PaginatingServer } from '../fixtures/paginating-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { post, startTestGateway, vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { Principal, type Context } from '../../core/plugin-api/context.ts';
import { definePlugin, type PluginDefinition } from '../../core/plugin-api/plugin.ts';
import type { ViewItem } from '../../core/plugin-api/view.ts';
import { GatewayError } from '../../core/base/errors.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import type { PluginSpec } from '../../core/plugin-api/plugin-loader.ts';

/** Who calls: the `x-user` header (a test stand-in for incoming auth). */
const headerUser = definePlugin({
  name: 'header-user',
  create: () => ({
    name: 'header-user',
    authenticate(ctx: Context) {
      const user = ctx.header('x-user');
      if (user !== undefined) ctx.principal = new Principal(user, { sub: user }, null);
    },
  }),
});

/** What `bob` may see: even-numbered tools of `a`, `b`'s echo tool; of `b` nothing else. `alice` sees everything. */
/** The policy in force: a reload test widens it to every tool of `a` (a policy changed by a reload). */
const policy = { wide: false };

function bobSees(item: ViewItem): boolean {
  if (item.backend === 'a') return policy.wide || /[02468]$/.test(item.original);
  // b's catch-all template, and through it one concrete resource only.
  if (item.kind === 'resourceTemplates') return item.name === 'fixture://b/{name}';
  if (item.kind === 'resources') return item.name === 'fixture://b/open';
  return item.kind === 'tools' && item.original === 'echo';
}

interface Asked {
  visible: number;
  admit: number;
}

function viewPlugin(asked: Asked): PluginDefinition<undefined> {
  return definePlugin({
    name: 'test-view',
    create: () => ({
      name: 'test-view',
      view: {
        key: (ctx: Context) => (ctx.principal?.subject === 'bob' ? 'bob' : null),
        visible(_ctx: Context, items: readonly ViewItem[]) {
          asked.visible++;
          return items.map(bobSees);
        },
        knowsBackend: (_ctx: Context, backend: string) => backend === 'a',
        admit(_ctx: Context, item: ViewItem, request) {
          asked.admit++;
          const args = request.params?.['arguments'] as Record<string, unknown> | undefined;
          if (item.original === 'echo' && args?.['text'] === 'secret') return new GatewayError('forbidden', `${item.name} may not be called with these arguments`);
          return undefined;
        },
      },
    }),
  });
}

const specs = (asked: Asked): PluginSpec[] => [
  { definition: headerUser, config: undefined, source: 'test' },
  { definition: viewPlugin(asked), config: undefined, source: 'test' },
];

/** All pages of a list through the SDK client: their sizes and the names. */
async function pagedNames(url: string, user: string): Promise<{ sizes: number[]; names: string[] }> {
  const c = await connectClient(url, { headers: { 'x-user': user } });
  try {
    const sizes: number[] = [];
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await c.client.listTools(cursor === undefined ? {} : { cursor });
      sizes.push(page.tools.length);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return { sizes, names };
  } finally {
    await c.close();
  }
}

/** The JSON-RPC error of a raw call in a fresh legacy session of `user`. */
async function errorOf(url: string, user: string, method: string, params: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const c = await connectClient(url, { headers: { 'x-user': user }, waitForStandaloneStream: false });
  try {
    const sessionId = c.transport.sessionId!;
    const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }), { 'x-user': user, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' });
    return { status: res.status, text: res.text };
  } finally {
    await c.close();
  }
}

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

async function modern(url: string, user: string, method: string, params: Record<string, unknown> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const name: Record<string, string> = typeof params['name'] === 'string' ? { 'mcp-name': params['name'] } : {};
  const headers = { 'x-user': user, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...name };
  const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 9, method, params: { ...params, _meta: MODERN_META } }), headers);
  return { status: res.status, body: res.json as Record<string, unknown> };
}

describe('views: aggregated, what a caller may not see does not exist for it', () => {
  let a: PaginatingServer;
  let b: SdkServer;
  let gateway: RunningVmcp;
  const asked: Asked = { visible: 0, admit: 0 };

  before(async () => {
    a = await startPaginatingServer({ name: 'a', tools: 20, pageSize: 7 });
    b = await startSdkServer({ name: 'b', tools: ['echo', 'add'], extraTemplates: ['fixture://b/{name}'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      config: 'aggregation: {pageSize: 4}',
      plugins: specs(asked),
    });
  });
  after(async () => {
    await gateway.stop();
    await a.close();
    await b.close();
  });

  it('pages the caller\'s own list: full pages, the exact set, and everything for a caller no view decides on', async () => {
    const bob = await pagedNames(gateway.url, 'bob');
    const expected = [...Array.from({ length: 10 }, (_, i) => `a_tool_${String(i * 2).padStart(3, '0')}`), 'b_echo'];
    assert.deepEqual(bob.names, expected);
    assert.deepEqual(bob.sizes, [4, 4, 3], 'pages are filled before a cursor is given');
    const alice = await pagedNames(gateway.url, 'alice');
    assert.equal(alice.names.length, 22);
    assert.deepEqual(alice.sizes, [4, 4, 4, 4, 4, 2]);
  });

  it('asks the views once per list and caller, not per page or call', async () => {
    const c = await connectClient(gateway.url, { headers: { 'x-user': 'bob' } });
    try {
      await c.client.listTools();
      const before = asked.visible;
      const first = await c.client.listTools();
      await c.client.listTools({ cursor: first.nextCursor! });
      await c.client.callTool({ name: 'a_tool_002', arguments: {} });
      assert.equal(asked.visible, before);
    } finally {
      await c.close();
    }
  });

  it('answers a hidden tool, prompt and resource exactly as ones that do not exist', async () => {
    const pairs: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ['tools/call', { name: 'a_tool_001', arguments: {} }, { name: 'a_tool_999', arguments: {} }],
      ['tools/call', { name: 'b_add', arguments: { a: 1, b: 2 } }, { name: 'b_nope', arguments: { a: 1, b: 2 } }],
      ['prompts/get', { name: 'b_greet', arguments: { name: 'x' } }, { name: 'b_nothing', arguments: { name: 'x' } }],
      ['resources/read', { uri: 'fixture://b/static' }, { uri: 'fixture://b/statik' }],
      ['completion/complete', { ref: { type: 'ref/prompt', name: 'b_greet' }, argument: { name: 'name', value: 'a' } }, { ref: { type: 'ref/prompt', name: 'b_gret' }, argument: { name: 'name', value: 'a' } }],
      ['completion/complete', { ref: { type: 'ref/resource', uri: 'fixture://b/item/{id}' }, argument: { name: 'id', value: '1' } }, { ref: { type: 'ref/resource', uri: 'fixture://b/itm/{id}' }, argument: { name: 'id', value: '1' } }],
    ];
    for (const [method, hidden, absent] of pairs) {
      const seen = await errorOf(gateway.url, 'bob', method, hidden);
      const none = await errorOf(gateway.url, 'bob', method, absent);
      const name = (p: Record<string, unknown>): string => String(p['name'] ?? p['uri'] ?? (p['ref'] as Record<string, string>)['name'] ?? (p['ref'] as Record<string, string>)['uri']);
      assert.equal(seen.status, none.status, method);
      assert.equal(seen.text.replaceAll(name(hidden), 'X'), none.text.replaceAll(name(absent), 'X'), `${method} ${name(hidden)}`);
      assert.match(seen.text, /"error"/);
      // And alice, whom no view restricts, gets the item.
      const allowed = await errorOf(gateway.url, 'alice', method, hidden);
      assert.doesNotMatch(allowed.text, /"error"/, `${method} for alice`);
    }
  });

  it('decides on a concrete URI read through a template: a hidden listed resource is not reached that way', async () => {
    const hidden = await errorOf(gateway.url, 'bob', 'resources/read', { uri: 'fixture://b/static' });
    const other = await errorOf(gateway.url, 'bob', 'resources/read', { uri: 'fixture://b/else' });
    const absent = await errorOf(gateway.url, 'bob', 'resources/read', { uri: 'nowhere://x' });
    for (const [res, uri] of [[hidden, 'fixture://b/static'], [other, 'fixture://b/else']] as const) {
      assert.equal(res.text.replace(uri, 'X'), absent.text.replace('nowhere://x', 'X'), uri);
    }
    const open = await errorOf(gateway.url, 'bob', 'resources/read', { uri: 'fixture://b/open' });
    assert.match(open.text, /extra 0 of b/);
    const forAlice = await errorOf(gateway.url, 'alice', 'resources/read', { uri: 'fixture://b/static' });
    assert.match(forAlice.text, /static resource of b/);
  });

  it('refuses by the arguments through the admit step, before any backend', async () => {
    const sent = b.received.length;
    const refused = await errorOf(gateway.url, 'bob', 'tools/call', { name: 'b_echo', arguments: { text: 'secret' } });
    assert.match(refused.text, /may not be called with these arguments/);
    assert.equal(b.received.filter((r) => r.text.includes('secret')).length, 0);
    const fine = await errorOf(gateway.url, 'bob', 'tools/call', { name: 'b_echo', arguments: { text: 'hello' } });
    assert.doesNotMatch(fine.text, /"error"/);
    assert.ok(b.received.length > sent);
  });

  it('names only backends the caller may know when a tool cannot be called now', async () => {
    await b.close();
    try {
      // b is down: alice (no view) hears it is unavailable; bob, who may not know b, hears "unknown".
      const c = await errorOf(gateway.url, 'alice', 'tools/call', { name: 'b_echo', arguments: { text: 'x' } });
      assert.match(c.text, /cannot be called now/);
      const hidden = await errorOf(gateway.url, 'bob', 'tools/call', { name: 'b_echo', arguments: { text: 'x' } });
      assert.match(hidden.text, /Unknown tool: b_echo/);
      assert.doesNotMatch(hidden.text, /"b"|backend/);
    } finally {
      b = await startSdkServer({ name: 'b', tools: ['echo', 'add'], port: new URL(b.url).port === '' ? undefined : Number(new URL(b.url).port) });
    }
  });

  it('tells a client of only the backends it may know in the instructions and server/discover', async () => {
    await withClient(gateway.url, { headers: { 'x-user': 'bob' } }, async (c) => {
      assert.match(c.client.getInstructions() ?? '', /aggregating: a\.$/m);
    });
    await withClient(gateway.url, { headers: { 'x-user': 'alice' } }, async (c) => {
      assert.match(c.client.getInstructions() ?? '', /aggregating: a, b\./);
    });
    const discovered = await modern(gateway.url, 'bob', 'server/discover');
    const instructions = String((discovered.body['result'] as Record<string, unknown>)['instructions']);
    assert.match(instructions, /aggregating: a\.$/m);
  });

  it('serves a modern client its own list, private to it, and hides the same items', async () => {
    const list = await modern(gateway.url, 'bob', 'tools/list');
    const result = list.body['result'] as { tools: { name: string }[]; cacheScope: string; nextCursor?: string };
    assert.deepEqual(result.tools.map((t) => t.name), ['a_tool_000', 'a_tool_002', 'a_tool_004', 'a_tool_006']);
    assert.equal(result.cacheScope, 'private');
    const hidden = await modern(gateway.url, 'bob', 'tools/call', { name: 'a_tool_001', arguments: {} });
    const absent = await modern(gateway.url, 'bob', 'tools/call', { name: 'a_tool_999', arguments: {} });
    assert.equal(JSON.stringify(hidden.body).replace('a_tool_001', 'X'), JSON.stringify(absent.body).replace('a_tool_999', 'X'));
    const ok = await modern(gateway.url, 'bob', 'tools/call', { name: 'a_tool_002', arguments: {} });
    assert.ok(ok.body['result'] !== undefined, JSON.stringify(ok.body));
  });
});

describe('views: one backend is served as a group of one, under its own names', () => {
  let a: PaginatingServer;
  let gateway: RunningVmcp;
  const asked: Asked = { visible: 0, admit: 0 };

  before(async () => {
    a = await startPaginatingServer({ name: 'a', tools: 20, pageSize: 7 });
    gateway = await startTestGateway({ backends: [{ name: 'a', url: a.url }], config: 'aggregation: {pageSize: 4}', plugins: specs(asked) });
  });
  after(async () => {
    await gateway.stop();
    await a.close();
  });

  it('filters before the gateway\'s own pages, and hides a tool as an unknown one', async () => {
    const bob = await pagedNames(gateway.url, 'bob');
    assert.deepEqual(bob.names, Array.from({ length: 10 }, (_, i) => `tool_${String(i * 2).padStart(3, '0')}`));
    assert.deepEqual(bob.sizes, [4, 4, 2]);
    const hidden = await errorOf(gateway.url, 'bob', 'tools/call', { name: 'tool_001', arguments: {} });
    const absent = await errorOf(gateway.url, 'bob', 'tools/call', { name: 'tool_999', arguments: {} });
    assert.equal(hidden.text.replace('tool_001', 'X'), absent.text.replace('tool_999', 'X'));
    await withClient(gateway.url, { headers: { 'x-user': 'alice' } }, async (c) => {
      assert.equal((await c.client.listTools()).tools.length, 4);
      const called = await c.client.callTool({ name: 'tool_001', arguments: {} });
      assert.ok(!called.isError);
    });
  });

  it('hides the same for a modern client', async () => {
    const list = await modern(gateway.url, 'bob', 'tools/list');
    assert.deepEqual((list.body['result'] as { tools: { name: string }[] }).tools.map((t) => t.name), ['tool_000', 'tool_002', 'tool_004', 'tool_006']);
  });
});

describe('views: a reload tells list_changed to exactly the sessions whose lists changed for them', () => {
  let a: PaginatingServer;
  let b: SdkServer;
  let gateway: RunningVmcp;
  const asked: Asked = { visible: 0, admit: 0 };
  const backends = (): { name: string; url: string }[] => [
    { name: 'a', url: a.url },
    { name: 'b', url: b.url },
  ];

  before(async () => {
    a = await startPaginatingServer({ name: 'a', tools: 6, pageSize: 7 });
    b = await startSdkServer({ name: 'b', tools: ['echo', 'add'] });
    gateway = await startTestGateway({ backends: backends(), plugins: specs(asked) });
  });
  after(async () => {
    policy.wide = false;
    await gateway.stop();
    await a.close();
    await b.close();
  });

  async function reload(config: string | undefined): Promise<void> {
    const loaded = await loadVmcpConfig(await writeConfig(vmcpYaml({ backends: backends(), ...(config === undefined ? {} : { config }) })));
    const outcome = await gateway.reload(loaded, vmcpBuiltins(loaded));
    assert.equal(outcome.status, 'applied');
  }

  it('a policy change: bob, whose view widened, is told; alice, whose list is the same, is not', async () => {
    const bob = await connectClient(gateway.url, { headers: { 'x-user': 'bob' } });
    const alice = await connectClient(gateway.url, { headers: { 'x-user': 'alice' } });
    try {
      assert.equal((await bob.client.listTools()).tools.length, 4);
      assert.equal((await alice.client.listTools()).tools.length, 8);
      // The policy widens with a reload of a configuration that changes nothing any list shows.
      policy.wide = true;
      await reload('aggregation: {pageSize: 100}');
      await bob.waitForNotification('notifications/tools/list_changed', undefined, 5_000);
      assert.equal((await bob.client.listTools()).tools.length, 7);
      // alice's stream reopened on the new generation too (bob's did, and was told): nothing for her.
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(alice.notifications.filter((n) => n.method === 'notifications/tools/list_changed').length, 0);
      assert.equal((await alice.client.listTools()).tools.length, 8);
    } finally {
      await bob.close();
      await alice.close();
    }
  });

  it('a tool filter changed by the reload: the session is told, with no backend saying a word', async () => {
    const alice = await connectClient(gateway.url, { headers: { 'x-user': 'alice' } });
    try {
      assert.equal((await alice.client.listTools()).tools.length, 8);
      await reload('aggregation: {tools: [{workload: b, filter: [echo]}]}');
      await alice.waitForNotification('notifications/tools/list_changed', undefined, 5_000);
      assert.deepEqual((await alice.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('b_')), ['b_echo']);
    } finally {
      await alice.close();
    }
  });
});
