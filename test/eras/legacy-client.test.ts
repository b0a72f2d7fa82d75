/**
 * A legacy client (SDK v1, 2025-11-25, sessions) in front of backends of both generations in one
 * aggregated group: an SDK v2 server that refuses the legacy era, and an SDK v1 server. The
 * gateway speaks 2026-07-28 to the first (no session; the client's capabilities from its
 * initialize in `_meta` of every request; the standard headers with the backend's own names)
 * and 2025-11-25 to the second.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

describe('eras: a legacy client, a modern-only backend and a legacy one in one group', () => {
  let modern: Sdk2Server;
  let legacy: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    modern = await startSdk2Server({ name: 'm', posture: 'modern' });
    legacy = await startSdkServer({ name: 'l', tools: ['echo', 'add'] });
    gateway = await startTestGateway({ backends: [{ name: 'm', url: modern.url }, { name: 'l', url: legacy.url }] });
  });
  after(async () => {
    await gateway.stop();
    await modern.close();
    await legacy.close();
  });

  it('lists and calls the tools of both; the modern backend gets the 2026-07-28 envelope and headers, no session', async () => {
    const c = await connectClient(gateway.url, { clientName: 'legacy-client', capabilities: { elicitation: true } });
    try {
      const tools = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.ok(tools.includes('m_echo') && tools.includes('l_echo'), tools.join(', '));
      assert.deepEqual((await c.client.callTool({ name: 'm_echo', arguments: { text: 'hi' } })).content, [{ type: 'text', text: 'm: hi' }]);
      assert.deepEqual((await c.client.callTool({ name: 'l_echo', arguments: { text: 'hi' } })).content, [{ type: 'text', text: 'l: hi' }]);
      const call = modern.requests.find((r) => (r.body as { method?: string } | undefined)?.method === 'tools/call');
      assert.ok(call !== undefined);
      assert.equal(call.headers['mcp-protocol-version'], '2026-07-28');
      assert.equal(call.headers['mcp-method'], 'tools/call');
      assert.equal(call.headers['mcp-name'], 'echo', 'the backend\'s own name');
      assert.equal(call.headers['mcp-session-id'], undefined);
      const meta = (call.body as { params: { _meta: Record<string, unknown> } }).params._meta;
      assert.equal(meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
      assert.deepEqual(meta['io.modelcontextprotocol/clientCapabilities'], { elicitation: { form: {} } }, 'the capabilities the client declared at initialize');
      assert.equal((meta['io.modelcontextprotocol/clientInfo'] as { name: string }).name, 'legacy-client');
      assert.ok(!modern.requests.some((r) => (r.body as { method?: string } | undefined)?.method === 'initialize'), 'never initialized');
    } finally {
      await c.close();
    }
  });

  it('a modern backend\'s input_required becomes requests the gateway pushes to the client; its answers go back in a retry', async () => {
    const asked: string[] = [];
    const c = await connectClient(gateway.url, {
      onElicitation: (request) => {
        asked.push(`elicit: ${String(request.params.message)}`);
        return { action: 'accept', content: { name: 'Ann' } };
      },
      onSampling: (request) => {
        asked.push(`sample: ${JSON.stringify(request.params.messages[0]?.content)}`);
        return { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'fixture-model' };
      },
    });
    try {
      const elicited = await c.client.callTool({ name: 'm_elicit', arguments: { message: 'who are you?' } });
      assert.deepEqual(elicited.structuredContent, { action: 'accept', content: { name: 'Ann' } });
      const sampled = await c.client.callTool({ name: 'm_sample', arguments: { prompt: 'capital of France?' } });
      assert.deepEqual(sampled.content, [{ type: 'text', text: JSON.stringify({ type: 'text', text: 'Paris' }) }]);
      assert.deepEqual(asked, ['elicit: who are you?', 'sample: {"type":"text","text":"capital of France?"}']);
      const retries = modern.requests.filter((r) => (r.body as { params?: { inputResponses?: unknown } } | undefined)?.params?.inputResponses !== undefined);
      assert.equal(retries.length, 2, 'each call retried once, with the answers');
      const retry = retries[0]!.body as { params: { requestState?: string; inputResponses: Record<string, unknown> } };
      assert.equal(retry.params.requestState, 'asked:who are you?', 'the backend\'s requestState came back to it');
      assert.deepEqual(retry.params.inputResponses, { who: { action: 'accept', content: { name: 'Ann' } } });
    } finally {
      await c.close();
    }
  });

  it('a client that declared no elicitation: the backend, told the real capabilities, refuses (-32021) and the client hears it, nothing pushed', async () => {
    const c = await connectClient(gateway.url, {});
    try {
      await assert.rejects(c.client.callTool({ name: 'm_elicit', arguments: { message: 'who?' } }), (err: unknown) => err instanceof McpError && err.code === -32021 && /backend "m"/.test(err.message));
      assert.equal(c.serverRequests.length, 0);
    } finally {
      await c.close();
    }
  });

  it('the GET stream carries a modern backend\'s list changes: the gateway listens to it (subscriptions/listen) on the client\'s behalf', async () => {
    const c = await connectClient(gateway.url, {});
    try {
      await new Promise((resolve) => setTimeout(resolve, 200)); // the backend's listen opens
      modern.notify.toolsChanged();
      await c.waitForNotification('notifications/tools/list_changed', undefined, 5_000);
      const listen = modern.requests.find((r) => (r.body as { method?: string } | undefined)?.method === 'subscriptions/listen');
      assert.ok(listen !== undefined, 'the gateway opened a listen on the modern backend');
      assert.ok(!c.notifications.some((n) => n.method === 'notifications/subscriptions/acknowledged'), 'the backend\'s acknowledgement is the gateway\'s business');
    } finally {
      await c.close();
    }
  });

  it('progress of a modern backend\'s call reaches the legacy client', async () => {
    const c = await connectClient(gateway.url, {});
    try {
      const progress: number[] = [];
      const result = await c.client.callTool({ name: 'm_progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => void progress.push(p.progress) });
      assert.deepEqual(result.content, [{ type: 'text', text: 'done' }]);
      assert.deepEqual(progress, [1, 2, 3]);
    } finally {
      await c.close();
    }
  });

  it('/status knows each backend\'s era, and the modern backend is healthy', async () => {
    const status = (await (await fetch(new URL('/status', gateway.url))).json()) as { backends: { name: string; era: string; health: string }[] };
    const m = status.backends.find((b) => b.name === 'm')!;
    assert.equal(m.era, 'modern');
    assert.equal(status.backends.find((b) => b.name === 'l')!.era, 'legacy');
  });
});
