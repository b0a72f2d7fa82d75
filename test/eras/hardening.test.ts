/**
 * What an attacker review of the era bridging found, each refused or fixed: a plugin's refusal
 * comes before a modern client's requests open backend sessions; repeated standard headers; a
 * legacy session speaking for itself in a modern envelope; logs a modern client did not ask for;
 * a modern client that names itself nowhere; era verdicts from answers that say nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { definePlugin } from '../../core/plugin-api/plugin.ts';
import { Reply } from '../../core/plugin-api/reply.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { verdictOf } from '../../core/mcp/aggregate/profiles.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { rawExchange, rawRequestBytes } from '../helpers/raw-http.ts';

const MODERN_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' };
const meta = (extra: Record<string, unknown> = {}) => ({ 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, ...extra });

async function post(url: string, body: unknown, headers: Record<string, string | string[]> = {}): Promise<{ status: number; text: string }> {
  const list = new Headers();
  for (const [k, v] of Object.entries({ ...MODERN_HEADERS, ...headers })) for (const one of Array.isArray(v) ? v : [v]) list.append(k, one);
  const res = await fetch(url, { method: 'POST', headers: list, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

describe('eras: hardening', () => {
  let legacy: SdkServer;
  let modern: Sdk2Server;
  let gateway: RunningVmcp;
  let guarded: RunningVmcp;

  before(async () => {
    legacy = await startSdkServer({ name: 'l', tools: ['echo', 'log'] });
    modern = await startSdk2Server({ name: 'm', posture: 'modern' });
    const backends = [{ name: 'l', url: legacy.url }, { name: 'm', url: modern.url }];
    gateway = await startTestGateway({ backends });
    // A plugin that refuses everyone: nothing of a caller it refuses may reach a backend.
    const denyAll = definePlugin({ name: 'deny-all', create: () => ({ name: 'deny-all', onMessage: () => Reply.json(403, { error: 'forbidden', error_description: 'denied by policy' }) }) });
    guarded = await startTestGateway({ backends, plugins: [{ definition: denyAll, config: undefined, source: 'test' }] });
  });
  after(async () => {
    await gateway.stop();
    await guarded.stop();
    await legacy.close();
    await modern.close();
  });

  it('a plugin refusing the caller refuses a modern client before any backend session is opened for it', async () => {
    const initializes = () => legacy.received.filter((r) => r.rpcMethods.includes('initialize') && !String(r.headers['user-agent']).startsWith('gatehouse/')).length;
    const before = initializes();
    for (let i = 0; i < 3; i++) {
      const res = await post(guarded.url, { jsonrpc: '2.0', id: i, method: 'server/discover', params: { _meta: meta({ 'io.modelcontextprotocol/clientCapabilities': { experimental: { n: i } } }) } }, { 'mcp-method': 'server/discover' });
      assert.equal(res.status, 403, res.text);
    }
    assert.equal(initializes(), before, 'no legacy backend was initialized for a refused caller');
  });

  it('Mcp-Method, Mcp-Name or MCP-Protocol-Version sent twice: 400 -32020, nothing forwarded', async () => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'l_echo', arguments: { text: 'x' }, _meta: meta() } };
    const repeated: Record<string, string | string[]>[] = [
      { 'mcp-method': ['tools/call', 'tools/list'], 'mcp-name': 'l_echo' },
      { 'mcp-method': 'tools/call', 'mcp-name': ['l_echo', 'admin_delete_everything'] },
      { 'mcp-method': 'tools/call', 'mcp-name': 'l_echo', 'mcp-protocol-version': ['2026-07-28', '2025-03-26'] },
    ];
    for (const headers of repeated) {
      // Each copy on a line of its own (fetch would join them into one).
      const lines: [string, string][] = [['content-type', 'application/json'], ['accept', 'application/json, text/event-stream']];
      for (const [name, value] of Object.entries({ 'mcp-protocol-version': '2026-07-28', ...headers })) for (const one of Array.isArray(value) ? value : [value]) lines.push([name, one]);
      const res = await rawExchange(gateway.url, rawRequestBytes('POST', gateway.url, lines, JSON.stringify(call)), 3000, true);
      assert.equal(res.status, 400, res.text);
      assert.match(res.body, /"code":-32020/);
      assert.match(res.body, /may each be sent once/);
    }
  });

  it('a legacy session cannot speak for itself in a modern envelope: the modern backend gets what its initialize declared', async () => {
    const c = await connectClient(gateway.url, { clientName: 'honest-client', waitForStandaloneStream: false });
    try {
      await c.transport.send({
        jsonrpc: '2.0',
        id: 77,
        method: 'tools/call',
        params: { name: 'm_echo', arguments: { text: 'x' }, _meta: { 'io.modelcontextprotocol/clientCapabilities': { sampling: {}, roots: {} }, 'io.modelcontextprotocol/clientInfo': { name: 'spoofed-admin-console', version: '9' }, 'io.modelcontextprotocol/logLevel': 'debug' } },
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const call = modern.requests.filter((r) => (r.body as { id?: unknown } | undefined)?.id === 77).at(-1);
      const sent = (call?.body as { params: { _meta: Record<string, unknown> } }).params._meta;
      assert.deepEqual(sent['io.modelcontextprotocol/clientCapabilities'], {}, 'the session\'s capabilities');
      assert.equal((sent['io.modelcontextprotocol/clientInfo'] as { name: string }).name, 'honest-client');
      assert.equal(sent['io.modelcontextprotocol/logLevel'], undefined);
    } finally {
      await c.close();
    }
  });

  it('a modern client that asked for no logs gets none from a legacy backend; one that asked gets them', async () => {
    const call = (logLevel?: string) => ({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'l_log', arguments: { level: 'info', message: 'secret-ish detail' }, _meta: meta(logLevel === undefined ? {} : { 'io.modelcontextprotocol/logLevel': logLevel }) } });
    const headers = { 'mcp-method': 'tools/call', 'mcp-name': 'l_log' };
    assert.doesNotMatch((await post(gateway.url, call(), headers)).text, /notifications\/message/);
    assert.doesNotMatch((await post(gateway.url, call('error'), headers)).text, /notifications\/message/, 'below its level');
    assert.match((await post(gateway.url, call('debug'), headers)).text, /notifications\/message/);
  });

  it('a modern client that names itself nowhere still reaches a legacy backend', async () => {
    const res = await post(gateway.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'l_echo', arguments: { text: 'anonymous' }, _meta: meta({ 'io.modelcontextprotocol/clientCapabilities': { experimental: { unnamed: {} } } }) } }, { 'mcp-method': 'tools/call', 'mcp-name': 'l_echo' });
    assert.equal(res.status, 200, res.text);
    assert.match(res.text, /l: anonymous/);
  });

  it('an answer that says nothing of the era gives no verdict (rate limited, too large, a result that is not an object)', () => {
    for (const status of [401, 403, 408, 413, 429, 431, 500, 503]) assert.equal(verdictOf({ status, sessionId: null, response: null, text: '', bytes: 0 }, 0), null, String(status));
    assert.equal(verdictOf({ status: 200, sessionId: null, response: { jsonrpc: '2.0', id: 1, result: null }, text: '', bytes: 0 }, 0), null);
    assert.equal(verdictOf({ status: 400, sessionId: null, response: null, text: 'Bad Request: No valid session ID provided', bytes: 0 }, 0)?.era, 'legacy');
    assert.equal(verdictOf({ status: 200, sessionId: null, response: { jsonrpc: '2.0', id: 1, result: { supportedVersions: ['2026-07-28'] } }, text: '', bytes: 0 }, 0)?.era, 'modern');
  });
});
