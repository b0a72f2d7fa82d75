/**
 * A modern client (SDK v2 pinned to 2026-07-28: no initialize, no session) in front of an
 * aggregated group of both generations: an SDK v2 server (modern) and an SDK v1 server (legacy).
 * The gateway answers server/discover itself, serves the merged lists with cache hints, and
 * routes calls to each backend in its own era: the legacy one through backend sessions the
 * gateway holds for this principal and these capabilities.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** A raw modern POST (what the SDK would never send wrong). */
async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

describe('eras: a modern client in front of an aggregated group of both generations', () => {
  let modern: Sdk2Server;
  let legacy: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    modern = await startSdk2Server({ name: 'm', posture: 'modern' });
    legacy = await startSdkServer({ name: 'l', tools: ['echo', 'add', 'elicit', 'sample', 'add_tool', 'bump', 'slow'] });
    gateway = await startTestGateway({ backends: [{ name: 'm', url: modern.url }, { name: 'l', url: legacy.url }] });
  });
  after(async () => {
    await gateway.stop();
    await modern.close();
    await legacy.close();
  });

  async function connect(mode: 'auto' | { pin: string } = { pin: '2026-07-28' }): Promise<Client> {
    const client = new Client({ name: 'modern-client', version: '1.0.0' }, { versionNegotiation: { mode: mode as never } });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    return client;
  }

  it('connects pinned to 2026-07-28: the gateway\'s discovery names every version and the merged capabilities', async () => {
    const client = await connect();
    try {
      assert.equal(client.getProtocolEra(), 'modern');
      const discovered = client.getDiscoverResult()!;
      assert.deepEqual(discovered.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
      assert.ok(discovered.capabilities.tools !== undefined);
    } finally {
      await client.close();
    }
  });

  it('lists and calls the tools of both backends, each in its own era; no session id anywhere', async () => {
    const client = await connect();
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.ok(tools.includes('m_echo') && tools.includes('l_echo'), tools.join(', '));
      assert.deepEqual((await client.callTool({ name: 'm_echo', arguments: { text: 'hi' } })).content, [{ type: 'text', text: 'm: hi' }]);
      assert.deepEqual((await client.callTool({ name: 'l_echo', arguments: { text: 'hi' } })).content, [{ type: 'text', text: 'l: hi' }]);
    } finally {
      await client.close();
    }
    const toLegacy = legacy.received.filter((r) => r.rpcMethods.includes('tools/call'));
    assert.ok(toLegacy.length > 0);
    assert.ok(toLegacy.every((r) => typeof r.headers['mcp-session-id'] === 'string'), 'the legacy backend is called on a session the gateway holds');
    assert.ok(toLegacy.every((r) => !r.text.includes('io.modelcontextprotocol/protocolVersion')), 'without the modern envelope');
  });

  it('a legacy backend\'s requests for input reach the modern client as input_required; its retry resumes the parked call', async () => {
    const client = new Client({ name: 'modern-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { elicitation: { form: {} }, sampling: {} } });
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(`elicit: ${request.params.message}`);
      return { action: 'accept', content: { name: 'Ann' } };
    });
    client.setRequestHandler('sampling/createMessage', async (request) => {
      asked.push(`sample: ${JSON.stringify(request.params.messages.at(-1)?.content)}`);
      return { model: 'fixture-model', role: 'assistant', content: { type: 'text', text: 'Paris' } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    try {
      const elicited = await client.callTool({ name: 'l_elicit', arguments: { message: 'who are you?' } });
      assert.deepEqual(elicited.structuredContent, { action: 'accept', content: { name: 'Ann' } });
      const sampled = await client.callTool({ name: 'l_sample', arguments: { prompt: 'capital of France?' } });
      assert.match(JSON.stringify(sampled.content), /Paris/);
      assert.deepEqual(asked, ['elicit: who are you?', 'sample: {"type":"text","text":"capital of France?"}']);
    } finally {
      await client.close();
    }
  });

  it('a requestState the gateway did not issue, issued to another call, or replayed: -32602, nothing reaches the backend', async () => {
    const call = (requestState: string) => ({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'l_elicit', arguments: { message: 'x' }, inputResponses: {}, requestState, _meta: META } });
    const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'l_elicit' };
    for (const state of ['gh1.forged.c2ln', 'gh1.' + Buffer.from('{"p":"x","o":"","m":"tools/call","n":"elicit","e":9999999999999}').toString('base64url') + '.AAAA']) {
      const res = await post(gateway.url, call(state), headers);
      assert.equal((res.body['error'] as { code: number } | undefined)?.code, -32602, JSON.stringify(res.body));
    }
  });

  it('subscriptions/listen: list changes of both backends, each from its own era, tagged with the subscription and filtered', async () => {
    const client = await connect();
    const seen: { method: string; subscriptionId: unknown }[] = [];
    client.setNotificationHandler('notifications/tools/list_changed', async (n) => void seen.push({ method: n.method, subscriptionId: n.params?._meta?.['io.modelcontextprotocol/subscriptionId'] }));
    client.setNotificationHandler('notifications/resources/updated', async (n) => void seen.push({ method: n.method, subscriptionId: (n.params as { uri: string }).uri }));
    try {
      const subscription = await client.listen({ toolsListChanged: true, resourceSubscriptions: ['fixture://l/counter'] });
      assert.deepEqual(subscription.honoredFilter, { toolsListChanged: true, resourceSubscriptions: ['fixture://l/counter'] });
      const waitFor = async (count: number): Promise<void> => {
        for (let i = 0; i < 100 && seen.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      };
      await new Promise((resolve) => setTimeout(resolve, 200)); // the backends' streams open
      modern.notify.toolsChanged();
      await waitFor(1);
      await client.callTool({ name: 'l_add_tool', arguments: { name: 'late' } });
      await waitFor(2);
      await client.callTool({ name: 'l_bump', arguments: {} });
      await waitFor(3);
      assert.equal(seen.filter((s) => s.method === 'notifications/tools/list_changed').length >= 2, true, JSON.stringify(seen));
      assert.ok(seen.filter((s) => s.method === 'notifications/tools/list_changed').every((s) => typeof s.subscriptionId === 'number' || typeof s.subscriptionId === 'string'));
      assert.ok(seen.some((s) => s.method === 'notifications/resources/updated' && s.subscriptionId === 'fixture://l/counter'), JSON.stringify(seen));
      await subscription.close();
    } finally {
      await client.close();
    }
  });

  it('a listen that ends releases what it opened on a legacy backend: its subscriptions (once no other listen holds them) and its GET stream', async () => {
    // Capabilities of their own: an implicit session no other test shares.
    const client = new Client({ name: 'modern-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { experimental: { listenEnd: {} } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const changed: string[] = [];
    client.setNotificationHandler('notifications/tools/list_changed', async (n) => void changed.push(String(n.params?._meta?.['io.modelcontextprotocol/subscriptionId'])));
    const counter = 'fixture://l/counter';
    const unsubscribes = () => legacy.received.filter((r) => r.rpcMethods.includes('resources/unsubscribe') && (r.body as { params?: { uri?: string } }).params?.uri === counter).length;
    const subscribes = () => legacy.received.filter((r) => r.rpcMethods.includes('resources/subscribe') && (r.body as { params?: { uri?: string } }).params?.uri === counter).length;
    const settle = (ms = 300) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      const before = { subscribes: subscribes(), unsubscribes: unsubscribes() };
      const first = await client.listen({ resourceSubscriptions: [counter] });
      const second = await client.listen({ resourceSubscriptions: [counter] });
      await settle();
      assert.ok(subscribes() > before.subscribes, 'the legacy backend was subscribed for the listens');
      await first.close();
      await settle();
      assert.equal(unsubscribes(), before.unsubscribes, 'another listen still follows the resource');
      await second.close();
      for (let i = 0; i < 50 && unsubscribes() === before.unsubscribes; i++) await settle(20);
      assert.equal(unsubscribes(), before.unsubscribes + 1, 'the last listen to end unsubscribed it');
      // The backend takes one GET stream per session: a new listen hears it only if the ended ones' stream was closed.
      const third = await client.listen({ toolsListChanged: true });
      await settle();
      await client.callTool({ name: 'l_add_tool', arguments: { name: 'after-listens' } });
      for (let i = 0; i < 50 && changed.length === 0; i++) await settle(20);
      assert.ok(changed.length > 0, 'the new listen hears the legacy backend on a stream of its own');
      await third.close();
    } finally {
      await client.close();
    }
  });

  it('progress of a legacy backend\'s call reaches the modern client on the call\'s stream', async () => {
    const client = await connect();
    try {
      const progress: number[] = [];
      const result = await client.callTool({ name: 'l_slow', arguments: { steps: 3, delayMs: 5 } }, { onprogress: (p) => void progress.push(p.progress) });
      assert.match(JSON.stringify(result.content), /done/);
      assert.deepEqual(progress, [1, 2, 3]);
    } finally {
      await client.close();
    }
  });

  it('answers with resultType and cache hints, and without Mcp-Session-Id', async () => {
    const listed = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }),
    });
    assert.equal(listed.status, 200);
    assert.equal(listed.headers.get('mcp-session-id'), null);
    const result = ((await listed.json()) as { result: Record<string, unknown> }).result;
    assert.equal(result['resultType'], 'complete');
    assert.equal(typeof result['ttlMs'], 'number');
    assert.equal(result['cacheScope'], 'private', 'a legacy backend\'s list comes from a session of this principal');
  });

  it('refuses malformed modern requests as 2026-07-28 says, each with its error', async () => {
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'm_echo', arguments: { text: 'x' }, _meta: META } };
    const base = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'm_echo' };
    const cases: [string, unknown, Record<string, string>, number, number][] = [
      ['header missing', call, { 'mcp-method': 'tools/call', 'mcp-name': 'm_echo' }, 400, -32020],
      ['header disagrees with _meta', call, { ...base, 'mcp-protocol-version': '2025-11-25' }, 400, -32020],
      ['Mcp-Method missing', call, { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'm_echo' }, 400, -32020],
      ['Mcp-Name missing', call, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' }, 400, -32020],
      ['Mcp-Name disagrees', call, { ...base, 'mcp-name': 'l_echo' }, 400, -32020],
      ['unknown version', { ...call, params: { ...call.params, _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } }, { ...base, 'mcp-protocol-version': '2099-01-01' }, 400, -32022],
      ['no clientCapabilities', { ...call, params: { ...call.params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }, base, 400, -32602],
      ['modern header, no _meta', { jsonrpc: '2.0', id: 7, method: 'tools/list' }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }, 400, -32602],
      ['unknown method', { jsonrpc: '2.0', id: 7, method: 'nothing/here', params: { _meta: META } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'nothing/here' }, 404, -32601],
      ['ping is gone in 2026', { jsonrpc: '2.0', id: 7, method: 'ping', params: { _meta: META } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'ping' }, 404, -32601],
    ];
    for (const [what, body, headers, status, code] of cases) {
      const res = await post(gateway.url, body, headers);
      assert.equal(res.status, status, what);
      assert.equal((res.body['error'] as { code: number }).code, code, `${what}: ${JSON.stringify(res.body)}`);
    }
    const unknown = await post(gateway.url, { ...call, params: { ...call.params, _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } }, { ...base, 'mcp-protocol-version': '2099-01-01' });
    assert.deepEqual((unknown.body['error'] as { data: { supported: string[] } }).data.supported, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
  });

  it('GET and DELETE from a modern client are 405', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(gateway.url, { method, headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' } });
      assert.equal(res.status, 405, method);
    }
  });

  it('a dual-era client (auto) connects as modern; an SDK v2 client in legacy mode still gets a 2025 session', async () => {
    const auto = await connect('auto');
    assert.equal(auto.getProtocolEra(), 'modern');
    await auto.close();
    const old = new Client({ name: 'legacy-mode', version: '1.0.0' });
    await old.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    try {
      assert.equal(old.getProtocolEra(), 'legacy');
      assert.deepEqual((await old.callTool({ name: 'm_echo', arguments: { text: 'old' } })).content, [{ type: 'text', text: 'm: old' }]);
    } finally {
      await old.close();
    }
  });
});
