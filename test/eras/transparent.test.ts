/**
 * Transparent mode (one backend) across eras: a request in the backend's own generation of MCP
 * passes through untouched; one of the other generation is bridged by the gateway, which then
 * holds the session (a legacy client, a modern backend) or the backend session (a modern client,
 * a legacy backend), and relays requests for input either way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

async function modernClient(url: string): Promise<ModernClient> {
  const client = new ModernClient({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never }, capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ann' } }));
  await client.connect(new ModernTransport(new URL(url)));
  return client;
}

describe('eras, transparent: a modern client, a legacy backend', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;
  before(async () => {
    backend = await startSdkServer({ name: 'legacy', tools: ['echo', 'elicit'] });
    gateway = await startTestGateway({ backends: [{ name: 'legacy', url: backend.url }] });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('lists, calls and elicits under the backend\'s own names, on a backend session the gateway holds', async () => {
    const client = await modernClient(gateway.url);
    try {
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['echo', 'elicit']);
      assert.deepEqual((await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content, [{ type: 'text', text: 'legacy: hi' }]);
      assert.deepEqual((await client.callTool({ name: 'elicit', arguments: { message: 'who?' } })).structuredContent, { action: 'accept', content: { name: 'Ann' } });
    } finally {
      await client.close();
    }
  });
});

describe('eras, transparent: a legacy client, a modern-only backend', () => {
  let backend: Sdk2Server;
  let gateway: RunningVmcp;
  before(async () => {
    backend = await startSdk2Server({ name: 'modern', posture: 'modern' });
    gateway = await startTestGateway({ backends: [{ name: 'modern', url: backend.url }] });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('initializes with the gateway, lists, calls and answers elicitations the backend asks for', async () => {
    const c = await connectClient(gateway.url, { onElicitation: () => ({ action: 'accept', content: { name: 'Bo' } }) });
    try {
      assert.ok((await c.client.listTools()).tools.some((t) => t.name === 'echo'));
      assert.deepEqual((await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content, [{ type: 'text', text: 'modern: hi' }]);
      assert.deepEqual((await c.client.callTool({ name: 'elicit', arguments: { message: 'who?' } })).structuredContent, { action: 'accept', content: { name: 'Bo' } });
    } finally {
      await c.close();
    }
    assert.ok(!backend.requests.some((r) => (r.body as { method?: string } | undefined)?.method === 'initialize'), 'the backend never saw a legacy handshake');
  });
});

describe('eras, transparent: each client in the backend\'s own era passes through untouched', () => {
  let dual: Sdk2Server;
  let legacy: SdkServer;
  let toDual: RunningVmcp;
  let toLegacy: RunningVmcp;
  before(async () => {
    dual = await startSdk2Server({ name: 'dual', posture: 'dual' });
    legacy = await startSdkServer({ name: 'legacy', tools: ['echo'] });
    toDual = await startTestGateway({ backends: [{ name: 'dual', url: dual.url }] });
    toLegacy = await startTestGateway({ backends: [{ name: 'legacy', url: legacy.url }] });
  });
  after(async () => {
    await toDual.stop();
    await toLegacy.stop();
    await dual.close();
    await legacy.close();
  });

  it('a modern client and a modern backend: the backend gets the client\'s own request, id and headers', async () => {
    const client = await modernClient(toDual.url);
    try {
      await client.callTool({ name: 'echo', arguments: { text: 'through' } });
    } finally {
      await client.close();
    }
    const call = dual.requests.filter((r) => (r.body as { method?: string } | undefined)?.method === 'tools/call').at(-1)!;
    assert.equal((call.body as { params: { _meta: Record<string, unknown> } }).params._meta['io.modelcontextprotocol/clientInfo'] !== undefined, true);
    assert.equal(call.headers['mcp-name'], 'echo');
    assert.equal(typeof (call.body as { id: unknown }).id, 'number', 'the client\'s own id');
    assert.equal(call.headers['user-agent'], 'node', 'the client\'s own headers: passed through, not a request the gateway made');
  });

  it('a legacy client and a legacy backend: the backend\'s own session id reaches the client', async () => {
    const c = await connectClient(toLegacy.url);
    try {
      await c.client.callTool({ name: 'echo', arguments: { text: 'through' } });
      assert.ok(legacy.sessionIds().includes(c.transport.sessionId!), 'the client holds the backend\'s session id');
    } finally {
      await c.close();
    }
  });
});
