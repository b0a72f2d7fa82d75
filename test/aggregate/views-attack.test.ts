/**
 * Plugin views (per-user tool policy) reviewed as an attacker would: each test is a way a caller
 * could learn of, or reach, what its view hides, or learn of a backend it may not know. The views
 * here are a test plugin's: the caller is named by `x-user`, its role by `x-role` (a stand-in for
 * a token's claims: one principal, several keys).
 *
 *   admin  no view decides on it (key null): sees everything, knows every backend.
 *   ops    sees everything, and knows a and b (a key of its own, so the views are asked).
 *   user   of `a` everything but the tool `add`; of `b` the tools echo and add and the template
 *          fixture://b/{+path}, nothing else (no prompt, no resource); knows only `a`. Its admit
 *          step refuses it a subscription to fixture://a/counter (which it may read).
 *
 * Tests marked `todo` are findings left open (they fail today and say why); the others pass.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../fixtures/client.ts';
import { startPaginatingServer, type PaginatingServer } from '../fixtures/paginating-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';
import { Principal, type Context } from '../../core/plugin-api/context.ts';
import { definePlugin } from '../../core/plugin-api/plugin.ts';
import type { ViewItem } from '../../core/plugin-api/view.ts';
import { GatewayError } from '../../core/base/errors.ts';
import type { JsonRpcRequest } from '../../core/protocol/jsonrpc.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import type { PluginSpec } from '../../core/plugin-api/plugin-loader.ts';

type Role = 'admin' | 'ops' | 'user';

const roleOf = (ctx: Context): Role => (ctx.principal?.claims['role'] as Role | undefined) ?? 'user';

const headerUser = definePlugin({
  name: 'header-user',
  create: () => ({
    name: 'header-user',
    authenticate(ctx: Context) {
      const user = ctx.header('x-user');
      if (user !== undefined) ctx.principal = new Principal(user, { sub: user, role: ctx.header('x-role') ?? 'user' }, null);
    },
  }),
});

function userSees(item: ViewItem): boolean {
  if (item.backend === 'a') return !(item.kind === 'tools' && item.original === 'add');
  if (item.kind === 'tools') return item.original === 'echo' || item.original === 'add';
  return item.kind === 'resourceTemplates' && item.original === 'fixture://b/{+path}';
}

const viewPlugin = definePlugin({
  name: 'role-view',
  create: () => ({
    name: 'role-view',
    view: {
      key: (ctx: Context) => (roleOf(ctx) === 'admin' ? null : `role=${roleOf(ctx)}`),
      visible: (ctx: Context, items: readonly ViewItem[]) => items.map((item) => roleOf(ctx) === 'ops' || userSees(item)),
      knowsBackend: (ctx: Context, backend: string) => backend === 'a' || roleOf(ctx) === 'ops',
      // user may read a's counter but not follow it.
      admit(ctx: Context, item: ViewItem, request: JsonRpcRequest) {
        if (roleOf(ctx) === 'user' && request.method === 'resources/subscribe' && item.name === 'fixture://a/counter') return new GatewayError('forbidden', 'may not subscribe to it');
        return undefined;
      },
    },
  }),
});

const specs: PluginSpec[] = [
  { definition: headerUser, config: undefined, source: 'test' },
  { definition: viewPlugin, config: undefined, source: 'test' },
];

const LEGACY = '2025-11-25';
const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** A legacy session opened with raw requests, as `user` with `role`: its headers for the next requests. */
async function rawSession(url: string, user: string, role: Role): Promise<Record<string, string>> {
  const who = { 'x-user': user, 'x-role': role };
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'attack', version: '1' } } };
  const res = await post(url, JSON.stringify(init), who);
  assert.equal(res.status, 200, res.text);
  const headers = { ...who, 'mcp-session-id': res.headers.get('mcp-session-id')!, 'mcp-protocol-version': LEGACY };
  await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
  return headers;
}

async function rpc(url: string, headers: Record<string, string>, method: string, params: Record<string, unknown> = {}): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
  const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }), headers);
  return { status: res.status, text: res.text, body: responseOf(res.text) };
}

/** A raw call in a fresh legacy session of `user` with `role`. */
async function once(url: string, role: Role, method: string, params: Record<string, unknown> = {}): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
  return rpc(url, await rawSession(url, role, role), method, params);
}

/** A 2026-07-28 request (stateless) of `user` with `role`. */
async function modern(url: string, user: string, role: Role, method: string, params: Record<string, unknown> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const name: Record<string, string> = typeof params['name'] === 'string' ? { 'mcp-name': params['name'] } : typeof params['uri'] === 'string' ? { 'mcp-name': params['uri'] } : {};
  const headers = { 'x-user': user, 'x-role': role, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...name };
  const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 9, method, params: { ...params, _meta: MODERN_META } }), headers);
  return { status: res.status, body: responseOf(res.text) };
}

/** The JSON-RPC response of an answer: a JSON body, or the last message of an SSE one. */
function responseOf(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    const data = text.split('\n').filter((line) => line.startsWith('data: ') && line.length > 6);
    return data.length === 0 ? {} : (JSON.parse(data.at(-1)!.slice(6)) as Record<string, unknown>);
  }
}

/** What a modern client's subscriptions/listen honors (its acknowledgement), the stream then closed. */
async function listenAck(url: string, user: string, role: Role, notifications: Record<string, unknown>): Promise<unknown> {
  const abort = new AbortController();
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-user': user, 'x-role': role, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params: { notifications, _meta: MODERN_META } });
  const res = await fetch(url, { method: 'POST', headers, body, signal: abort.signal });
  let text = '';
  try {
    for await (const chunk of res.body!) {
      text += Buffer.from(chunk as Uint8Array).toString();
      const line = text.split('\n').find((l) => l.startsWith('data: ') && l.includes('notifications/subscriptions/acknowledged'));
      if (line !== undefined) return (JSON.parse(line.slice(6)) as { params: { notifications: unknown } }).params.notifications;
    }
  } finally {
    abort.abort();
  }
  throw new Error(`no acknowledgement: ${res.status} ${text}`);
}

const messageOf = (body: Record<string, unknown>): string => String((body['error'] as { message?: unknown } | undefined)?.message ?? '');

describe('views under attack: aggregated group of a and b', () => {
  let a: SdkServer;
  let b: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    a = await startSdkServer({ name: 'a', tools: ['echo', 'add'] });
    b = await startSdkServer({ name: 'b', tools: ['echo', 'add', 'add_tool'], extraTemplates: ['fixture://b/{+path}'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      config: 'aggregation: {pageSize: 2}',
      plugins: specs,
    });
  });
  after(async () => {
    await gateway.stop();
    await a.close();
    await b.close();
  });

  it('the harness: user sees what its view lets it, admin everything', async () => {
    const user = await rawSession(gateway.url, 'u', 'user');
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = (await rpc(gateway.url, user, 'tools/list', cursor === undefined ? {} : { cursor })).body['result'] as { tools: { name: string }[]; nextCursor?: string };
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    assert.deepEqual(names, ['a_echo', 'b_echo', 'b_add']);
    const templates = (await rpc(gateway.url, user, 'resources/templates/list')).body['result'] as { resourceTemplates: { uriTemplate: string }[] };
    assert.deepEqual(templates.resourceTemplates.map((t) => t.uriTemplate), ['fixture://a/item/{id}', 'fixture://b/{+path}']);
  });

  it('logging/setLevel: a failure names only the backends the caller may know', async () => {
    // Every backend refuses a level MCP does not define: the answer lists the ones that failed.
    const user = await once(gateway.url, 'user', 'logging/setLevel', { level: 'loudest' });
    assert.match(messageOf(user.body), /failed on every backend/);
    assert.doesNotMatch(messageOf(user.body), /\bb\b/, 'b is named to a caller that may not know it');
    const ops = await once(gateway.url, 'ops', 'logging/setLevel', { level: 'loudest' });
    assert.match(messageOf(ops.body), /: a, b$/);
  });

  it('a visible resource template does not reach a resource the view hides', async () => {
    const user = await rawSession(gateway.url, 'u', 'user');
    const readsOfStatic = (): number => b.received.filter((r) => r.text.includes('"resources/read"') && r.text.includes('fixture://b/static')).length;
    const before = readsOfStatic();
    // fixture://b/static is listed by b and hidden from user; b's template fixture://b/{+path} (visible) matches it.
    const hidden = await rpc(gateway.url, user, 'resources/read', { uri: 'fixture://b/static' });
    assert.doesNotMatch(hidden.text, /static resource of b/, 'the hidden resource was read through a visible template');
    assert.equal(messageOf(hidden.body), 'Resource not found: fixture://b/static');
    assert.equal(readsOfStatic(), before, 'the backend was asked for the hidden resource');
    // Nor subscribed to (its updates would reach the caller), nor completed as a ref.
    const subscribed = await rpc(gateway.url, user, 'resources/subscribe', { uri: 'fixture://b/counter' });
    assert.equal(messageOf(subscribed.body), 'Resource not found: fixture://b/counter');
    const completed = await rpc(gateway.url, user, 'completion/complete', { ref: { type: 'ref/resource', uri: 'fixture://b/static' }, argument: { name: 'x', value: '' } });
    assert.equal(messageOf(completed.body), 'Unknown resource template: fixture://b/static');
    // A hidden template named as a completion's ref: fixture://b/{+path} matches its text too.
    const template = await rpc(gateway.url, user, 'completion/complete', { ref: { type: 'ref/resource', uri: 'fixture://b/item/{id}' }, argument: { name: 'id', value: '' } });
    assert.equal(messageOf(template.body), 'Unknown resource template: fixture://b/item/{id}', template.text);
    // ops, whose view shows the resource, reads it.
    const ops = await once(gateway.url, 'ops', 'resources/read', { uri: 'fixture://b/static' });
    assert.match(ops.text, /static resource of b/);
  });

  it('a modern client: the same template does not reach the hidden resource either', async () => {
    const hidden = await modern(gateway.url, 'u', 'user', 'resources/read', { uri: 'fixture://b/static' });
    assert.doesNotMatch(JSON.stringify(hidden.body), /static resource of b/, JSON.stringify(hidden.body));
    assert.equal(messageOf(hidden.body), 'Resource not found: fixture://b/static', `${hidden.status} ${JSON.stringify(hidden.body)}`);
  });

  it('GET /status and /metrics, which name every backend, are not given to a caller a view restricts', async () => {
    const origin = new URL(gateway.url).origin;
    for (const path of ['/status', '/metrics']) {
      const user = await fetch(`${origin}${path}`, { headers: { 'x-user': 'u', 'x-role': 'user' } });
      const text = await user.text();
      assert.doesNotMatch(text, /"b"|backend="b"|fixture:\/\/b|127\.0\.0\.1:\d+/, `${path} names b to user`);
      assert.equal(user.status, 403, `${path}: ${text.slice(0, 200)}`);
      const admin = await fetch(`${origin}${path}`, { headers: { 'x-user': 'root', 'x-role': 'admin' } });
      assert.equal(admin.status, 200);
      await admin.text();
    }
  });

  it('server/discover names the backends the caller may know now, not those of whoever opened the implicit session', async () => {
    // One principal (u), two keys: a token of the ops role opens the implicit session, one of the user role uses it.
    const ops = await modern(gateway.url, 'u2', 'ops', 'server/discover');
    assert.match(String((ops.body['result'] as Record<string, unknown>)['instructions']), /aggregating: a, b\./);
    const user = await modern(gateway.url, 'u2', 'user', 'server/discover');
    const instructions = String((user.body['result'] as Record<string, unknown>)['instructions']);
    assert.match(instructions, /aggregating: a\.$/m, instructions);
  });

  it('a cursor issued under one key pages the list of the key in force, not pages kept for the other', async () => {
    const ops = await rawSession(gateway.url, 'u3', 'ops');
    const first = (await rpc(gateway.url, ops, 'tools/list')).body['result'] as { nextCursor: string };
    const second = (await rpc(gateway.url, ops, 'tools/list', { cursor: first.nextCursor })).body['result'] as { tools: { name: string }[] };
    assert.deepEqual(second.tools.map((t) => t.name), ['b_echo', 'b_add']);
    // The same session, its token refreshed with the user role: ops' second page must not come back.
    const user = { ...ops, 'x-role': 'user' };
    const page = await rpc(gateway.url, user, 'tools/list', { cursor: first.nextCursor });
    const tools = (page.body['result'] as { tools: { name: string }[] } | undefined)?.tools.map((t) => t.name) ?? [];
    assert.deepEqual(tools, ['b_add'], page.text);
    const call = await rpc(gateway.url, user, 'tools/call', { name: 'a_add', arguments: { a: 1, b: 2 } });
    assert.equal(messageOf(call.body), 'Unknown tool: a_add');
  });

  it('the admit step decides on the subscriptions a modern client asks of subscriptions/listen, as on resources/subscribe', async () => {
    const legacy = await once(gateway.url, 'user', 'resources/subscribe', { uri: 'fixture://a/counter' });
    assert.match(legacy.text, /may not subscribe to it/, `${legacy.status} ${legacy.text}`);
    const ack = await listenAck(gateway.url, 'u6', 'user', { toolsListChanged: true, resourceSubscriptions: ['fixture://a/counter'] });
    assert.deepEqual(ack, { toolsListChanged: true }, 'the subscription the admit step refuses is honored');
    // ops, whom the admit step lets through, has it.
    assert.deepEqual(await listenAck(gateway.url, 'u7', 'ops', { resourceSubscriptions: ['fixture://a/counter'] }), { resourceSubscriptions: ['fixture://a/counter'] });
  });

  it('a session is not served to another principal, who is told what a stranger is', async () => {
    const mine = await rawSession(gateway.url, 'owner', 'ops');
    const stolen = await rpc(gateway.url, { ...mine, 'x-user': 'thief', 'x-role': 'ops' }, 'tools/list');
    const none = await rpc(gateway.url, { ...mine, 'x-user': 'thief', 'x-role': 'ops', 'mcp-session-id': 'no-such-session' }, 'tools/list');
    assert.equal(stolen.status, 404);
    assert.equal(stolen.status, none.status);
    assert.equal(stolen.text, none.text);
  });

  it('list_changed that changes what the caller sees reaches it', async () => {
    const ops = await connectClient(gateway.url, { headers: { 'x-user': 'o5', 'x-role': 'ops' } });
    try {
      const all = async (): Promise<string[]> => {
        const names: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await ops.client.listTools(cursor === undefined ? {} : { cursor });
          names.push(...page.tools.map((t) => t.name));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return names;
      };
      assert.ok(!(await all()).includes('b_yyy'));
      const admin = await once(gateway.url, 'admin', 'tools/call', { name: 'b_add_tool', arguments: { name: 'yyy' } });
      assert.doesNotMatch(admin.text, /"error"/);
      await ops.waitForNotification('notifications/tools/list_changed', undefined, 5_000);
      assert.ok((await all()).includes('b_yyy'));
    } finally {
      await ops.close();
    }
  });

  it('list_changed from a backend whose items the caller cannot see does not reach it', async () => {
    const user = await connectClient(gateway.url, { headers: { 'x-user': 'u5', 'x-role': 'user' } });
    try {
      const before = (await user.client.listTools()).tools.map((t) => t.name);
      // admin adds a tool to b (in every session of b, the user's too): b says its list changed.
      const admin = await once(gateway.url, 'admin', 'tools/call', { name: 'b_add_tool', arguments: { name: 'zzz' } });
      assert.doesNotMatch(admin.text, /"error"/);
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.deepEqual((await user.client.listTools()).tools.map((t) => t.name), before, 'the user\'s list did not change');
      assert.equal(user.notifications.filter((n) => n.method === 'notifications/tools/list_changed').length, 0);
    } finally {
      await user.close();
    }
  });
});

describe('views under attack: a call of a visible tool whose backend the caller may not know fails', () => {
  let a: SdkServer;
  let b: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    a = await startSdkServer({ name: 'a', tools: ['echo', 'add'] });
    b = await startSdkServer({ name: 'b', tools: ['echo', 'add'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      plugins: specs,
    });
  });
  after(async () => {
    await gateway.stop();
    await a.close();
    await b.close();
  });

  it('the error does not name the backend', async () => {
    const user = await rawSession(gateway.url, 'u', 'user');
    const ok = await rpc(gateway.url, user, 'tools/call', { name: 'b_echo', arguments: { text: 'x' } });
    assert.match(ok.text, /b: x/);
    await b.close();
    const failed = await rpc(gateway.url, user, 'tools/call', { name: 'b_echo', arguments: { text: 'x' } });
    assert.match(failed.text, /"error"/);
    assert.doesNotMatch(messageOf(failed.body), /"b"|backend b\b/, failed.text);
    assert.doesNotMatch(JSON.stringify((failed.body['error'] as Record<string, unknown>)['data'] ?? null), /"b"/);
    assert.match(messageOf(failed.body), /the server that serves it is unavailable/);
    // An admin, whom no view restricts, is told which backend failed.
    const admin = await rawSession(gateway.url, 'root', 'admin');
    const named = await rpc(gateway.url, admin, 'tools/call', { name: 'b_echo', arguments: { text: 'x' } });
    assert.match(messageOf(named.body), /b/);
  });
});

describe('views under attack: a modern backend that calls its lists public', () => {
  let m: Sdk2Server;
  let gateway: RunningVmcp;
  const view = definePlugin({
    name: 'm-view',
    create: () => ({
      name: 'm-view',
      view: {
        key: (ctx: Context) => (roleOf(ctx) === 'admin' ? null : 'user'),
        // user does not see `add`, nor the resource fixture://m/static.
        visible: (_ctx: Context, items: readonly ViewItem[]) => items.map((item) => item.original !== 'add' && item.original !== 'fixture://m/static'),
      },
    }),
  });

  before(async () => {
    const hint = { ttlMs: 60_000, cacheScope: 'public' as const };
    m = await startSdk2Server({ name: 'm', posture: 'modern', cacheHints: { 'tools/list': hint, 'resources/read': hint } });
    gateway = await startTestGateway({
      backends: [{ name: 'm', url: m.url }],
      plugins: [
        { definition: headerUser, config: undefined, source: 'test' },
        { definition: view, config: undefined, source: 'test' },
      ],
    });
  });
  after(async () => {
    await gateway.stop();
    await m.close();
  });

  it('a list no view narrowed for this caller is still private: others get less', async () => {
    const admin = await modern(gateway.url, 'root', 'admin', 'tools/list');
    const result = admin.body['result'] as { tools: { name: string }[]; cacheScope: string };
    assert.ok(result.tools.some((t) => t.name === 'add'), JSON.stringify(admin.body));
    // Public, a shared cache could hand this list (with `add`) to the user, whose view hides `add`.
    assert.equal(result.cacheScope, 'private');
    const user = await modern(gateway.url, 'u', 'user', 'tools/list');
    assert.equal((user.body['result'] as { cacheScope: string }).cacheScope, 'private');
  });

  it('a resource read no view hides from this caller is private: another may not read it', async () => {
    const admin = await modern(gateway.url, 'root', 'admin', 'resources/read', { uri: 'fixture://m/static' });
    const result = admin.body['result'] as { contents: unknown[]; cacheScope?: string };
    assert.equal(result.contents.length, 1, JSON.stringify(admin.body));
    const user = await modern(gateway.url, 'u', 'user', 'resources/read', { uri: 'fixture://m/static' });
    assert.equal(messageOf(user.body), 'Resource not found: fixture://m/static');
    // A shared cache keeping admin's answer (public) would give the user what its view hides.
    assert.equal(result.cacheScope, 'private');
  });
});

describe('views under attack: names decided before the views (conflict strategies)', () => {
  let a: SdkServer;
  let b: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    a = await startSdkServer({ name: 'a', tools: ['echo', 'add'] });
    b = await startSdkServer({ name: 'b', tools: ['echo', 'add'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      config: 'aggregation: {conflictResolution: priority}',
      plugins: specs,
    });
  });
  after(async () => {
    await gateway.stop();
    await a.close();
    await b.close();
  });

  it('priority: a visible tool is named as if the hidden one of the same name existed', { todo: 'finding: exposed names are decided before the views, so b\'s add is b_add for user, telling it that a hidden add exists (see the report)' }, async () => {
    const user = await once(gateway.url, 'user', 'tools/list');
    const names = (user.body['result'] as { tools: { name: string }[] }).tools.map((t) => t.name).sort();
    // a's add is hidden from user; without it, b's add would be `add` (the only one of that name).
    assert.deepEqual(names, ['add', 'b_echo', 'echo']);
  });
});

describe('views under attack: what initialize declares', () => {
  let a: PaginatingServer;
  let b: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    // a serves tools only; b (hidden from user but for two tools) brings prompts, resources, logging, completions.
    a = await startPaginatingServer({ name: 'a', tools: 2, pageSize: 10 });
    b = await startSdkServer({ name: 'b', tools: ['fail'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'a', url: a.url },
        { name: 'b', url: b.url },
      ],
      plugins: specs,
    });
  });
  after(async () => {
    await gateway.stop();
    await a.close();
    await b.close();
  });

  it('capabilities only a hidden backend has are declared to the caller', { todo: 'finding: the merged capabilities are every backend\'s (see the report)' }, async () => {
    const who = { 'x-user': 'u', 'x-role': 'user' };
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'attack', version: '1' } } };
    const res = await post(gateway.url, JSON.stringify(init), who);
    const capabilities = ((res.json as Record<string, unknown>)['result'] as Record<string, Record<string, unknown>>)['capabilities']!;
    assert.ok(capabilities['tools'] !== undefined);
    // user sees no prompt and no resource, and knows no backend that logs or completes.
    assert.deepEqual(Object.keys(capabilities).sort(), ['tools'], JSON.stringify(capabilities));
  });
});
