/**
 * `spec.config.rateLimiting` end to end, with the official SDK client through the gateway:
 *  - aggregated (the gateway owns the session): per user, two users with their own tokens; per
 *    tool; per backend; a refused call is a JSON-RPC error (code 429, data.retryAfterSeconds) and the session
 *    goes on, and serves again once a token refilled; a call of an unknown tool, or one Cedar
 *    refuses, spends nothing;
 *  - transparent (a proxy): anonymous callers per address; a refused call is HTTP 429 with
 *    Retry-After and a JSON-RPC error body, and the SDK's session still works after the wait;
 *    a JSON-RPC batch is limited per message (the refused ones get errors, the rest reach the backend);
 *  - two gateways sharing Redis hold one limit (skipped with the reason without Redis, a failure
 *    under CI=true), for a principal whose subject is 8 KiB with CR/LF in it as well;
 *  - no way round them: X-Forwarded-For without trusted proxies, a tools/call without an id, a
 *    batch answered gzipped; and a 2026-07-28 client's retry of a call that asked for input is
 *    that call's, not a new one.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectClient, type ConnectedClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { openRawSession, post, startTestGateway } from '../helpers/gateway.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { RESOURCE, startOidcGateway, type OidcGateway } from '../incoming-auth/helpers/oidc-gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';

const text = (result: unknown): string => ((result as CallToolResult).content[0] as { text: string }).text;

/** The call's outcome: its text, or the JSON-RPC error the gateway answered it with. */
async function callTool(client: ConnectedClient, name: string, args: Record<string, unknown> = { text: 'hi' }): Promise<string | McpError> {
  try {
    return text(await client.client.callTool({ name, arguments: args }));
  } catch (err) {
    if (err instanceof McpError) return err;
    throw err;
  }
}

/** The JSON-RPC messages of an answer: a JSON body (one message or a batch), or the data of each SSE event. */
function messagesOf(res: { text: string; json: unknown }): unknown[] {
  if (res.json !== undefined) return Array.isArray(res.json) ? res.json : [res.json];
  return res.text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 6)
    .map((line) => JSON.parse(line.slice(6)) as unknown);
}

function assertLimited(outcome: string | McpError): number {
  assert.ok(outcome instanceof McpError, `expected a refusal, got ${String(outcome)}`);
  assert.equal(outcome.code, 429);
  assert.match(outcome.message, /Rate limit exceeded/);
  const retry = (outcome.data as { retryAfterSeconds: number }).retryAfterSeconds;
  assert.ok(Number.isInteger(retry) && retry >= 1, String(retry));
  return retry;
}

describe('rate limits: aggregated, per user and per tool', () => {
  let gw: OidcGateway;
  const clients: ConnectedClient[] = [];
  before(async () => {
    gw = await startOidcGateway({
      backends: [{ name: 'alpha' }, { name: 'beta' }],
      config: 'rateLimiting: {perUser: {maxTokens: 2, refillPeriod: 2s}, tools: [{name: beta_add, shared: {maxTokens: 1, refillPeriod: 1h}}]}',
    });
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await gw.stop();
  });
  const connect = async (sub: string): Promise<ConnectedClient> => {
    const client = await connectClient(gw.gateway.url, { headers: { authorization: await gw.bearer(sub) } });
    clients.push(client);
    return client;
  };

  it('limits each user alone; a refused call is a JSON-RPC error and the session serves again after the wait', async () => {
    const [alice, bob] = [await connect('alice'), await connect('bob')];
    assert.equal(await callTool(alice, 'alpha_echo'), 'alpha: hi');
    assert.equal(await callTool(alice, 'alpha_echo'), 'alpha: hi');
    const retry = assertLimited(await callTool(alice, 'beta_echo'));
    // Bob's bucket is his own.
    assert.equal(await callTool(bob, 'alpha_echo'), 'alpha: hi');
    // Listing is not counted, and the session is intact.
    assert.ok((await alice.client.listTools()).tools.length > 0);
    await sleep(retry * 1000 + 100);
    assert.equal(await callTool(alice, 'alpha_echo'), 'alpha: hi');
  });

  it('a tool\'s shared limit holds for everyone, other tools unaffected', async () => {
    const [carol, dave] = [await connect('carol'), await connect('dave')];
    assert.equal(await callTool(carol, 'beta_add', { a: 1, b: 2 }), '3');
    assertLimited(await callTool(dave, 'beta_add', { a: 1, b: 2 }));
    assert.equal(await callTool(dave, 'beta_echo'), 'beta: hi');
  });

  it('a call of a tool that does not exist spends nothing', async () => {
    const ivan = await connect('ivan');
    for (let i = 0; i < 4; i++) {
      const outcome = await callTool(ivan, 'alpha_nope');
      assert.ok(outcome instanceof McpError && outcome.code !== 429, String(outcome));
    }
    assert.equal(await callTool(ivan, 'alpha_echo'), 'alpha: hi');
    assert.equal(await callTool(ivan, 'alpha_echo'), 'alpha: hi');
  });

  it('a principal with an 8 KiB subject full of CR/LF is limited as anyone, and breaks nothing', async () => {
    const hostile = await connect(`${'x'.repeat(8 * 1024)}\r\nDEL *\r\n\u0000`);
    assert.equal(await callTool(hostile, 'alpha_echo'), 'alpha: hi');
    assert.equal(await callTool(hostile, 'alpha_echo'), 'alpha: hi');
    assertLimited(await callTool(hostile, 'alpha_echo'));
    const erin = await connect('erin');
    assert.equal(await callTool(erin, 'alpha_echo'), 'alpha: hi');
  });
});

describe('rate limits: after per-user policy (Cedar)', () => {
  let issuer: KeyIssuer;
  let backends: SdkServer[];
  let gateway: RunningVmcp;
  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    backends = [await startSdkServer({ name: 'alpha' }), await startSdkServer({ name: 'beta' })];
    const policy = `    authzConfig: {type: inline, inline: {policies: ['permit(principal, action == Action::"call_tool", resource == Tool::"alpha_echo");']}}`;
    gateway = await startTestGateway({
      backends: backends.map((b) => ({ name: b.name, url: b.url })),
      config: 'rateLimiting: {perUser: {maxTokens: 2, refillPeriod: 1h}}',
      incomingAuth: `${inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE })}\n${policy}`,
    });
  });
  after(async () => {
    await gateway.stop();
    for (const b of backends) await b.close();
    await issuer.close();
  });

  it('a call the policy refuses spends nothing of the caller\'s bucket', async () => {
    const client = await connectClient(gateway.url, { headers: { authorization: `Bearer ${await issuer.mint(issuer.claims(RESOURCE, { sub: 'judy' }))}` } });
    try {
      for (let i = 0; i < 4; i++) {
        const outcome = await callTool(client, 'alpha_add', { a: 1, b: 1 });
        assert.ok(outcome instanceof McpError && outcome.code !== 429, String(outcome));
      }
      assert.equal(await callTool(client, 'alpha_echo'), 'alpha: hi');
      assert.equal(await callTool(client, 'alpha_echo'), 'alpha: hi');
      assertLimited(await callTool(client, 'alpha_echo'));
    } finally {
      await client.close();
    }
  });
});

describe('rate limits: aggregated, per backend (workloads)', () => {
  let backends: SdkServer[];
  let gateway: RunningVmcp;
  before(async () => {
    backends = [await startSdkServer({ name: 'alpha' }), await startSdkServer({ name: 'beta' })];
    gateway = await startTestGateway({
      backends: backends.map((b) => ({ name: b.name, url: b.url })),
      config: 'rateLimiting: {workloads: [{workload: beta, shared: {maxTokens: 2, refillPeriod: 1h}}]}',
    });
  });
  after(async () => {
    await gateway.stop();
    for (const b of backends) await b.close();
  });

  it('limits the calls of every tool of one backend, and only of it', async () => {
    const client = await connectClient(gateway.url);
    try {
      assert.equal(await callTool(client, 'beta_echo'), 'beta: hi');
      assert.equal(await callTool(client, 'beta_add', { a: 2, b: 2 }), '4');
      assertLimited(await callTool(client, 'beta_echo'));
      for (let i = 0; i < 5; i++) assert.equal(await callTool(client, 'alpha_echo'), 'alpha: hi');
    } finally {
      await client.close();
    }
  });
});

describe('rate limits: transparent, anonymous per address', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;
  /** A backend that answers JSON, not SSE: the refused calls' errors join its JSON array. */
  let jsonBackend: SdkServer;
  let jsonGateway: RunningVmcp;
  before(async () => {
    backend = await startSdkServer({ name: 'solo' });
    gateway = await startTestGateway({ backends: [{ name: 'solo', url: backend.url }], config: 'rateLimiting: {perUser: {maxTokens: 2, refillPeriod: 2s}}' });
    jsonBackend = await startSdkServer({ name: 'solo', jsonResponse: true });
    jsonGateway = await startTestGateway({ backends: [{ name: 'solo', url: jsonBackend.url }], config: 'rateLimiting: {shared: {maxTokens: 1, refillPeriod: 1h}}' });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
    await jsonGateway.stop();
    await jsonBackend.close();
  });

  it('adds the refused calls\' errors to a backend\'s JSON answer to the rest of a batch', async () => {
    const headers = await openRawSession(jsonGateway.url);
    const call = (id: number): object => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: `m${id}` } } });
    const answer = await post(jsonGateway.url, JSON.stringify([call(1), call(2)]), headers);
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /application\/json/);
    const byId = new Map((answer.json as { id: number; result?: { content: { text: string }[] }; error?: { code: number } }[]).map((a) => [a.id, a]));
    assert.equal(byId.get(1)?.result?.content[0]?.text, 'solo: m1');
    assert.equal(byId.get(2)?.error?.code, 429);
  });

  it('answers 429 with Retry-After and a JSON-RPC error body; the SDK session works again after the wait', async () => {
    const client = await connectClient(gateway.url);
    try {
      assert.equal(await callTool(client, 'echo'), 'solo: hi');
      assert.equal(await callTool(client, 'echo'), 'solo: hi');
      await assert.rejects(client.client.callTool({ name: 'echo', arguments: { text: 'hi' } }), (err: unknown) => err instanceof StreamableHTTPError && err.code === 429);
      const headers = { 'mcp-session-id': client.transport.sessionId!, 'mcp-protocol-version': '2025-11-25' };
      const raw = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } }), headers);
      assert.equal(raw.status, 429);
      const retry = Number(raw.headers.get('retry-after'));
      assert.ok(Number.isInteger(retry) && retry >= 1, String(raw.headers.get('retry-after')));
      assert.deepEqual(raw.json, { jsonrpc: '2.0', id: 41, error: { code: 429, message: 'Rate limit exceeded', data: { error: 'rate_limited', retryAfterSeconds: retry } } });
      // Not counted: the session's other requests.
      assert.ok((await client.client.listTools()).tools.length > 0);
      await sleep(retry * 1000 + 100);
      assert.equal(await callTool(client, 'echo'), 'solo: hi');
    } finally {
      await client.close();
    }
  });

  it('limits a batch per message: the refused calls get errors, the rest reach the backend', async () => {
    await sleep(2_100); // a full bucket: the previous test spent it
    const headers = await openRawSession(gateway.url);
    const call = (id: number): object => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: `m${id}` } } });
    const mixed = await post(gateway.url, JSON.stringify([call(1), { jsonrpc: '2.0', id: 2, method: 'ping' }, call(3), call(4)]), headers);
    assert.equal(mixed.status, 200, mixed.text);
    const answers = messagesOf(mixed) as { id: number; result?: { content: { text: string }[] }; error?: { code: number; data: { retryAfterSeconds: number } } }[];
    assert.deepEqual(answers.map((a) => a.id).sort(), [1, 2, 3, 4]);
    const byId = new Map(answers.map((a) => [a.id, a]));
    assert.equal(byId.get(1)?.result?.content[0]?.text, 'solo: m1');
    assert.deepEqual(byId.get(2)?.result, {});
    assert.equal(byId.get(3)?.result?.content[0]?.text, 'solo: m3');
    assert.equal(byId.get(4)?.error?.code, 429);
    assert.ok(byId.get(4)!.error!.data.retryAfterSeconds >= 1);

    // Every call refused: 429 for the whole batch, each message its error.
    const refused = await post(gateway.url, JSON.stringify([call(5), call(6)]), headers);
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.deepEqual((refused.json as { id: number; error: { code: number } }[]).map((a) => [a.id, a.error.code]), [[5, 429], [6, 429]]);

    // The call refused, a notification passed: the backend's 202 becomes the refused call's error.
    const withNotification = await post(gateway.url, JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }, call(7)]), headers);
    assert.equal(withNotification.status, 200, withNotification.text);
    assert.deepEqual((messagesOf(withNotification) as { id: number; error: { code: number } }[]).map((a) => [a.id, a.error.code]), [[7, 429]]);
  });

  it('a reload without rateLimiting lifts the limits for the sessions already open', async () => {
    const client = await connectClient(gateway.url);
    try {
      const headers = { 'mcp-session-id': client.transport.sessionId!, 'mcp-protocol-version': '2025-11-25' };
      const raw = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } });
      let status = 0;
      for (let i = 0; i < 10 && status !== 429; i++) status = (await post(gateway.url, raw, headers)).status;
      assert.equal(status, 429);
      const outcome = await gateway.reload({ ...gateway.config, rateLimiting: null });
      assert.equal(outcome.status, 'applied', JSON.stringify(outcome));
      for (let i = 0; i < 5; i++) assert.equal(await callTool(client, 'echo'), 'solo: hi');
    } finally {
      await client.close();
    }
  });
});

describe('rate limits: an anonymous caller cannot name itself another address', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;
  before(async () => {
    backend = await startSdkServer({ name: 'solo' });
    gateway = await startTestGateway({ backends: [{ name: 'solo', url: backend.url }], config: 'rateLimiting: {perUser: {maxTokens: 1, refillPeriod: 1h}}' });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('without trusted proxies, X-Forwarded-For (one header or several, IPv4 or IPv6) picks no bucket of its own', async () => {
    const headers = await openRawSession(gateway.url);
    const call = (id: number): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } });
    assert.equal((await post(gateway.url, call(1), { ...headers, 'x-forwarded-for': '203.0.113.1' })).status, 200);
    for (const [i, forwarded] of ['203.0.113.2', '2001:db8::1', '198.51.100.7, 203.0.113.3', 'unknown'].entries()) {
      assert.equal((await post(gateway.url, call(i + 2), { ...headers, 'x-forwarded-for': forwarded, forwarded: `for=${forwarded}`, 'x-real-ip': forwarded })).status, 429, forwarded);
    }
  });
});

describe('rate limits: a tools/call sent without an id (as a notification)', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  const gateways: RunningVmcp[] = [];
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta' });
  });
  after(async () => {
    for (const gateway of gateways) await gateway.stop();
    await alpha.close();
    await beta.close();
  });
  const notification = (name: string): string => JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: { name, arguments: { text: 'x' } } });
  const callsSince = (backend: SdkServer, from: number): string[] => backend.received.slice(from).filter((r) => r.text.includes('tools/call')).map((r) => r.text);

  it('aggregated: reaches no backend (it would pass routing, an exclusion and the limits, and a backend may run it)', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      config:
        'aggregation: {conflictResolution: priority, conflictResolutionConfig: {priorityOrder: [alpha, beta]}, tools: [{workload: alpha, exclude: [crash]}]}, ' +
        'rateLimiting: {shared: {maxTokens: 1, refillPeriod: 1h}}, operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    gateways.push(gateway);
    const headers = await openRawSession(gateway.url);
    const from = [alpha.received.length, beta.received.length] as const;
    for (let i = 0; i < 3; i++) assert.equal((await post(gateway.url, notification('crash'), headers)).status, 202);
    assert.deepEqual([...callsSince(alpha, from[0]), ...callsSince(beta, from[1])], []);
  });

  it('transparent: counted as the call a backend may make of it; refused, it is not forwarded', async () => {
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }], config: 'rateLimiting: {shared: {maxTokens: 1, refillPeriod: 1h}}' });
    gateways.push(gateway);
    const headers = await openRawSession(gateway.url);
    const from = alpha.received.length;
    assert.equal((await post(gateway.url, notification('echo'), headers)).status, 202, 'the first takes the token and passes');
    assert.equal((await post(gateway.url, notification('echo'), headers)).status, 429);
    const batch = await post(gateway.url, JSON.stringify([JSON.parse(notification('echo')), { jsonrpc: '2.0', id: 3, method: 'ping' }]), headers);
    assert.equal(batch.status, 200, batch.text);
    assert.deepEqual((messagesOf(batch) as { id: number }[]).map((m) => m.id), [3], 'a refused notification gets no answer');
    assert.equal(callsSince(alpha, from).length, 1);
  });
});

describe('rate limits: a 2026-07-28 client\'s retry of a call that asked for input', () => {
  let legacy: SdkServer;
  let other: SdkServer;
  let gateway: RunningVmcp;
  before(async () => {
    legacy = await startSdkServer({ name: 'l', tools: ['echo', 'elicit'] });
    other = await startSdkServer({ name: 'o' });
    gateway = await startTestGateway({ backends: [{ name: 'l', url: legacy.url }, { name: 'o', url: other.url }], config: 'rateLimiting: {perUser: {maxTokens: 1, refillPeriod: 1h}}' });
  });
  after(async () => {
    await gateway.stop();
    await legacy.close();
    await other.close();
  });

  it('continues the call the limits let through (no second token); a requestState it did not issue runs nothing either way', async () => {
    const client = new ModernClient({ name: 'modern-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ann' } }));
    await client.connect(new ModernTransport(new URL(gateway.url)));
    try {
      const elicited = await client.callTool({ name: 'l_elicit', arguments: { message: 'who are you?' } });
      assert.deepEqual(elicited.structuredContent, { action: 'accept', content: { name: 'Ann' } });
      // The one token is spent: a new call is refused.
      await assert.rejects(client.callTool({ name: 'l_echo', arguments: { text: 'hi' } }), (err: unknown) => (err as { code?: number }).code === 429);
    } finally {
      await client.close();
    }
    // A state the gateway did not issue starts no call: refused as such, the backend never asked.
    const calls = legacy.received.filter((r) => r.rpcMethods.includes('tools/call')).length;
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const forged = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'l_echo', arguments: { text: 'x' }, inputResponses: {}, requestState: 'gh1.forged.c2ln', _meta: meta } };
    const answer = await post(gateway.url, JSON.stringify(forged), { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'l_echo' });
    assert.equal((messagesOf(answer)[0] as { error?: { code: number } }).error?.code, -32602, answer.text);
    assert.equal(legacy.received.filter((r) => r.rpcMethods.includes('tools/call')).length, calls);
  });
});

describe('rate limits: transparent, a batch answered by a backend that compresses when asked', () => {
  let backend: Server;
  const gateways: RunningVmcp[] = [];
  /** A stateless backend that answers a batch as JSON or SSE (by `?sse`), gzipped whenever the request accepts gzip. */
  before(async () => {
    backend = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const batch = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number }[] | { id?: number };
        const requests = (Array.isArray(batch) ? batch : [batch]).filter((m) => m.id !== undefined);
        if (requests.length === 0) return void res.writeHead(202).end();
        const answers = requests.map((m) => ({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: `ok ${m.id}` }] } }));
        const sse = (req.url ?? '').includes('sse');
        const body = sse ? answers.map((a) => `event: message\ndata: ${JSON.stringify(a)}\n\n`).join('') : JSON.stringify(answers);
        const gzip = /gzip/.test(req.headers['accept-encoding'] ?? '');
        res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
        res.end(gzip ? gzipSync(body) : body);
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const gateway of gateways) await gateway.stop();
    await new Promise<void>((resolve) => backend.close(() => resolve()));
  });

  for (const mode of ['json', 'sse'] as const) {
    it(`${mode}: the refused call's error reaches the client whole, beside the backend's answer`, async () => {
      const url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/mcp${mode === 'sse' ? '?sse' : ''}`;
      const gateway = await startTestGateway({ backends: [{ name: 'solo', url }], config: 'rateLimiting: {shared: {maxTokens: 1, refillPeriod: 1h}}' });
      gateways.push(gateway);
      const call = (id: number): object => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: {} } });
      const answer = await post(gateway.url, JSON.stringify([call(1), call(2)]), { 'accept-encoding': 'gzip' });
      assert.equal(answer.status, 200, answer.text);
      const byId = new Map((messagesOf(answer) as { id: number; result?: unknown; error?: { code: number } }[]).map((a) => [a.id, a]));
      assert.deepEqual(byId.get(1)?.result, { content: [{ type: 'text', text: 'ok 1' }] });
      assert.equal(byId.get(2)?.error?.code, 429);
    });
  }
});

describe('rate limits: two gateways sharing Redis hold one limit', () => {
  let redis: LocalRedis | Skip;
  let issuer: KeyIssuer;
  let backend: SdkServer;
  const gateways: RunningVmcp[] = [];
  before(async () => {
    redis = await openLocalRedis();
    if ('skip' in redis) return;
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    backend = await startSdkServer({ name: 'solo' });
    const config =
      `session: {storage: {type: redis, redis: {addr: "${redis.config.address}", keyPrefix: "${redis.keyPrefix}"}}}, ` +
      'rateLimiting: {perUser: {maxTokens: 3, refillPeriod: 1h}, tools: [{name: add, shared: {maxTokens: 2, refillPeriod: 1h}}]}';
    for (let i = 0; i < 2; i++) {
      gateways.push(await startTestGateway({ backends: [{ name: 'solo', url: backend.url }], config, incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }) }));
    }
  });
  after(async () => {
    for (const gateway of gateways) await gateway.stop();
    if ('skip' in redis) return;
    await backend.close();
    await issuer.close();
    await redis.cleanup();
  });
  const skip = (): Skip | null => ('skip' in redis ? redis : null);
  const bearer = async (sub: string): Promise<string> => `Bearer ${await issuer.mint(issuer.claims(RESOURCE, { sub }))}`;

  /** Calls through each gateway in turn: how many went through. */
  async function callsThrough(sub: string, tool: string, args: Record<string, unknown>, n: number): Promise<number> {
    const clients = await Promise.all(gateways.map(async (g) => connectClient(g.url, { headers: { authorization: await bearer(sub) } })));
    let passed = 0;
    try {
      for (let i = 0; i < n; i++) {
        try {
          await clients[i % clients.length]!.client.callTool({ name: tool, arguments: args });
          passed++;
        } catch (err) {
          assert.ok(err instanceof StreamableHTTPError && err.code === 429, String(err));
        }
      }
    } finally {
      for (const c of clients) await c.close();
    }
    return passed;
  }

  it('per user and per tool, whichever gateway a call reaches; keys stay under the storage prefix', async (t) => {
    if (skipIf(t, skip())) return;
    assert.equal(await callsThrough('alice', 'echo', { text: 'hi' }, 6), 3);
    assert.equal(await callsThrough('bob', 'echo', { text: 'hi' }, 2), 2, 'bob has his own bucket');
    assert.equal(await callsThrough('carol', 'add', { a: 1, b: 1 }, 2) + (await callsThrough('dave', 'add', { a: 1, b: 1 }, 2)), 2, 'the tool\'s shared bucket, across users and gateways');
    const hostile = `${'y'.repeat(8 * 1024)}\r\nFLUSHALL\r\n`;
    assert.equal(await callsThrough(hostile, 'echo', { text: 'hi' }, 5), 3);
    const { admin, keyPrefix } = redis as LocalRedis;
    const keys = await admin.keys(`${keyPrefix}ratelimit:vmcp:*`);
    assert.ok(keys.length >= 5, keys.join(' '));
    assert.ok(keys.every((key) => key.length < keyPrefix.length + 300 && !/[\r\n]/.test(key)), `a long identity is hashed: ${keys.map((k) => k.length).join(' ')}`);
  });
});
