/**
 * Transparent mode end to end: the official SDK client, through Gatehouse, to a real SDK server
 * (SSE and JSON response modes) and to @modelcontextprotocol/server-everything.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, textOf, withClient } from '../fixtures/client.ts';
import { startEverythingServer, type EverythingServer } from '../fixtures/everything-server.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { waitFor } from '../fixtures/processes.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';

describe('transparent mode: SDK client → Gatehouse → SDK server (SSE responses)', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    backend = await startSdkServer({ name: 'alpha' });
    gateway = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }] });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('initializes, lists and calls tools; the backend answered', async () => {
    await withClient(gateway.url, {}, async (c) => {
      assert.equal(c.client.getServerVersion()?.name, 'alpha');
      const tools = (await c.client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('echo') && tools.includes('slow') && tools.includes('sample'), tools.join());
      assert.equal(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'through the gateway' } })), 'alpha: through the gateway');
      const sum = await c.client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
      assert.deepEqual(sum.structuredContent, { sum: 5 });
    });
  });

  it('passes the backend session id through, and the backend sees its own Host and no client Authorization', async () => {
    await withClient(gateway.url, { headers: { authorization: 'Bearer client-secret-token' } }, async (c) => {
      const sessionId = c.transport.sessionId;
      assert.ok(sessionId);
      assert.ok(backend.sessionIds().includes(sessionId), 'the client holds the backend\'s own session id');
      await c.client.callTool({ name: 'echo', arguments: { text: 'x' } });
      const seen = backend.received.filter((r) => r.headers['mcp-session-id'] === sessionId);
      assert.ok(seen.length > 0);
      for (const request of seen) {
        assert.equal(request.headers.authorization, undefined, 'the client token never reaches a backend');
        assert.equal(request.headers.host, new URL(backend.url).host);
        assert.ok(request.headers['x-request-id'], 'the request id travels to the backend');
        assert.equal(request.headers['mcp-protocol-version'], '2025-11-25');
      }
    });
  });

  it('streams progress notifications over SSE as they happen', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const seen: number[] = [];
      const result = await c.client.callTool({ name: 'slow', arguments: { steps: 4, delayMs: 30 } }, CallToolResultSchema, {
        onprogress: (p) => seen.push(p.progress),
      });
      assert.equal(textOf(result), 'done');
      assert.deepEqual(seen, [1, 2, 3, 4]);
    });
  });

  it('round-trips sampling and elicitation (server→client requests on the stream)', async () => {
    await withClient(gateway.url, { capabilities: { sampling: true, elicitation: true } }, async (c) => {
      const sampled = await c.client.callTool({ name: 'sample', arguments: { prompt: 'a haiku' } });
      assert.match(textOf(sampled), /sampled: a haiku/);
      const elicited = await c.client.callTool({ name: 'elicit', arguments: { message: 'who are you?' } });
      assert.match(textOf(elicited), /accept/);
      assert.match(textOf(elicited), /fixture-user/);
      assert.ok(c.serverRequests.some((r) => r.method === 'sampling/createMessage'));
      assert.ok(c.serverRequests.some((r) => r.method === 'elicitation/create'));
    });
  });

  it('delivers resources/updated on the GET stream after a subscription', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const uri = 'fixture://alpha/counter';
      await c.client.subscribeResource({ uri });
      await c.client.callTool({ name: 'bump', arguments: {} });
      const update = await c.waitForNotification('notifications/resources/updated', (n) => n.params?.uri === uri);
      assert.equal(update.params?.uri, uri);
      const read = await c.client.readResource({ uri });
      assert.ok(read.contents.length > 0);
    });
  });

  it('serves prompts and completion', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const prompt = await c.client.getPrompt({ name: 'greet', arguments: { name: 'bob' } });
      assert.ok(prompt.messages.length > 0);
      const completion = await c.client.complete({ ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'al' } });
      assert.deepEqual(completion.completion.values.sort(), ['alfred', 'alice']);
    });
  });

  it('DELETE ends the session at the backend; its id then gets 404 through the gateway', async () => {
    const c = await connectClient(gateway.url);
    const sessionId = c.transport.sessionId!;
    assert.ok(backend.sessionIds().includes(sessionId));
    await c.close();
    await waitFor(() => !backend.sessionIds().includes(sessionId), 2000);
    const res = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      body: '{"jsonrpc":"2.0","id":5,"method":"tools/list"}',
    });
    assert.equal(res.status, 404);
  });

  it('resumes a stream the backend closed, with Last-Event-ID through the gateway', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const start = backend.received.length;
      const seen: number[] = [];
      const result = await c.client.callTool({ name: 'slow', arguments: { steps: 4, delayMs: 50, closeStreamAfter: 1 } }, CallToolResultSchema, {
        onprogress: (p) => seen.push(p.progress),
      });
      assert.equal(textOf(result), 'done');
      assert.deepEqual(seen, [1, 2, 3, 4]);
      const resumed = backend.received.slice(start).filter((r) => r.method === 'GET' && r.headers['last-event-id'] !== undefined);
      assert.equal(resumed.length, 1, 'exactly one resumption GET with Last-Event-ID reached the backend');
    });
  });

  it('passes the 2026-07-28 Mcp-Method / Mcp-Name headers through when they match the body', async () => {
    const c = await connectClient(gateway.url);
    try {
      const res = await fetch(gateway.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': c.transport.sessionId!,
          'mcp-protocol-version': '2025-11-25',
          'mcp-method': 'tools/call',
          'mcp-name': 'echo',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hdr' } } }),
      });
      assert.equal(res.status, 200);
      assert.match(await res.text(), /alpha: hdr/);
      const last = backend.received.at(-1)!;
      assert.equal(last.headers['mcp-method'], 'tools/call');
      assert.equal(last.headers['mcp-name'], 'echo');
    } finally {
      await c.close();
    }
  });
});

describe('transparent mode: SDK server in JSON response mode', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;

  before(async () => {
    backend = await startSdkServer({ name: 'jsonic', jsonResponse: true });
    gateway = await startTestGateway({ backends: [{ name: 'jsonic', url: backend.url }] });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('answers POSTs with the backend\'s plain JSON, and server→client traffic uses the GET stream', async () => {
    await withClient(gateway.url, { capabilities: { sampling: true } }, async (c) => {
      const res = await fetch(gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': c.transport.sessionId!, 'mcp-protocol-version': '2025-11-25' },
        body: '{"jsonrpc":"2.0","id":3,"method":"tools/list"}',
      });
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.equal(res.headers.get('x-accel-buffering'), null);
      const body = (await res.json()) as { id: number; result: { tools: unknown[] } };
      assert.equal(body.id, 3);
      assert.ok(body.result.tools.length > 5);
      const sampled = await c.client.callTool({ name: 'sample', arguments: { prompt: 'json mode' } });
      assert.match(textOf(sampled), /sampled: json mode/);
    });
  });
});

describe('transparent mode: SDK client → Gatehouse → server-everything', () => {
  let backend: EverythingServer;
  let gateway: RunningVmcp;

  before(async () => {
    backend = await startEverythingServer();
    gateway = await startTestGateway({ backends: [{ name: 'everything', url: backend.url }] });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('initializes and calls echo', async () => {
    await withClient(gateway.url, {}, async (c) => {
      assert.equal(c.client.getServerVersion()?.name, 'mcp-servers/everything');
      const tools = (await c.client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('echo'));
      assert.equal(textOf(await c.client.callTool({ name: 'echo', arguments: { message: 'hello everything' } })), 'Echo: hello everything');
    });
  });

  it('trigger-sampling-request and trigger-elicitation-request round trips', async () => {
    await withClient(gateway.url, { capabilities: { sampling: true, elicitation: true } }, async (c) => {
      const sampled = await c.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'say hi' } });
      assert.match(textOf(sampled), /"text": "sampled: .*say hi"/);
      assert.ok(c.serverRequests.some((r) => r.method === 'sampling/createMessage'));
      const elicited = await c.client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
      assert.match(textOf(elicited), /User provided the requested information/);
      assert.match(JSON.stringify(elicited.content), /Name: fixture-user/);
    });
  });

  it('trigger-long-running-operation reports progress through the gateway', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const seen: number[] = [];
      await c.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, CallToolResultSchema, {
        onprogress: (p) => seen.push(p.progress),
      });
      assert.deepEqual(seen, [1, 2, 3]);
    });
  });

  it('resource subscription delivers updates', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const uri = 'demo://resource/dynamic/text/1';
      await c.client.subscribeResource({ uri });
      await c.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      const update = await c.waitForNotification('notifications/resources/updated', (n) => n.params?.uri === uri);
      assert.deepEqual(update.params, { uri });
      await c.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await c.client.unsubscribeResource({ uri });
    });
  });
});
