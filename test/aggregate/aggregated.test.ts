/**
 * Aggregated mode end to end: the SDK client sees ONE server in front of three real ones — two
 * SDK servers with overlapping tool names (one answering in SSE, one in JSON response mode) and
 * @modelcontextprotocol/server-everything.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, textOf, withClient } from '../fixtures/client.ts';
import { startEverythingServer, type EverythingServer } from '../fixtures/everything-server.ts';
import { startPaginatingServer, type PaginatingServer } from '../fixtures/paginating-server.ts';
import { waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';

const BOTH = { capabilities: { sampling: true, elicitation: true } };

describe('aggregated: three backends behind one endpoint', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  let everything: EverythingServer;
  let gateway: RunningVmcp;

  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta', jsonResponse: true, tools: ['echo', 'add', 'sample', 'log'] });
    everything = await startEverythingServer();
    gateway = await startTestGateway({
      backends: [
        { name: 'alpha', url: alpha.url },
        { name: 'beta', url: beta.url },
        { name: 'everything', url: everything.url },
      ],
    });
  });
  after(async () => {
    await gateway.stop();
    await alpha.close();
    await beta.close();
    await everything.close();
  });

  it('initializes one session: its own id, merged capabilities, instructions naming the backends', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const sessionId = c.transport.sessionId!;
      assert.ok(sessionId.length >= 32, 'a random gateway session id');
      assert.ok(!alpha.sessionIds().includes(sessionId) && !beta.sessionIds().includes(sessionId), 'backend session ids stay inside');
      assert.equal(c.client.getServerVersion()?.name, 'vmcp');
      const caps = c.client.getServerCapabilities()!;
      assert.deepEqual(caps.tools, { listChanged: true });
      assert.equal(caps.resources?.subscribe, true);
      assert.ok(caps.logging !== undefined && caps.completions !== undefined);
      assert.match(c.client.getInstructions() ?? '', /aggregating: alpha, beta, everything/);
    });
  });

  it('lists every backend\'s tools with prefixed names and routes each call to its owner', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const names = (await c.client.listTools()).tools.map((t) => t.name);
      for (const name of ['alpha_echo', 'alpha_slow', 'beta_echo', 'beta_add', 'everything_echo', 'everything_get-sum']) assert.ok(names.includes(name), name);
      assert.ok(!names.includes('echo'), 'no bare names under the prefix strategy');
      assert.equal(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'a' } })), 'alpha: a');
      assert.equal(textOf(await c.client.callTool({ name: 'beta_echo', arguments: { text: 'b' } })), 'beta: b');
      assert.equal(textOf(await c.client.callTool({ name: 'everything_echo', arguments: { message: 'e' } })), 'Echo: e');
      const backendCall = beta.received.findLast((r) => r.rpcMethods.includes('tools/call'))!;
      assert.equal((backendCall.body as { params: { name: string } }).params.name, 'echo', 'the backend gets its own tool name');
    });
  });

  it('answers an unknown tool with -32602 naming it, and nothing reaches a backend', async () => {
    await withClient(gateway.url, {}, async (c) => {
      await c.client.listTools(); // the lists the lookup needs
      const before = alpha.received.length + beta.received.length;
      await assert.rejects(c.client.callTool({ name: 'no_such_tool', arguments: {} }), (err: unknown) => err instanceof McpError && err.code === -32602 && /no_such_tool/.test(err.message));
      assert.equal(alpha.received.length + beta.received.length, before);
    });
  });

  it('routes prompts (original name restored) and completion', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const prompts = (await c.client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(prompts.includes('alpha_greet') && prompts.includes('everything_simple-prompt'), prompts.join());
      const prompt = await c.client.getPrompt({ name: 'alpha_greet', arguments: { name: 'bob' } });
      assert.match(JSON.stringify(prompt.messages), /bob/);
      const completion = await c.client.complete({ ref: { type: 'ref/prompt', name: 'alpha_greet' }, argument: { name: 'name', value: 'al' } });
      assert.deepEqual(completion.completion.values.sort(), ['alfred', 'alice']);
    });
  });

  it('routes resources by URI and template, and delivers subscription updates on the GET stream', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const uris = (await c.client.listResources()).resources.map((r) => r.uri);
      assert.ok(uris.includes('fixture://alpha/static') && uris.some((u) => u.startsWith('demo://')), uris.join());
      assert.match(JSON.stringify((await c.client.readResource({ uri: 'fixture://alpha/static' })).contents), /static resource of alpha/);
      assert.match(JSON.stringify((await c.client.readResource({ uri: 'fixture://alpha/item/42' })).contents), /42/);
      await assert.rejects(c.client.readResource({ uri: 'nowhere://x' }), (err: unknown) => err instanceof McpError && err.code === -32002);
      const uri = 'fixture://alpha/counter';
      await c.client.subscribeResource({ uri });
      await c.client.callTool({ name: 'alpha_bump', arguments: {} });
      const update = await c.waitForNotification('notifications/resources/updated', (n) => n.params?.uri === uri);
      assert.equal(update.params?.uri, uri);
    });
  });

  it('round-trips sampling and elicitation from an SSE backend (on the request stream)', async () => {
    await withClient(gateway.url, BOTH, async (c) => {
      assert.match(textOf(await c.client.callTool({ name: 'alpha_sample', arguments: { prompt: 'haiku' } })), /sampled: haiku/);
      const elicited = await c.client.callTool({ name: 'alpha_elicit', arguments: { message: 'who?' } });
      assert.match(textOf(elicited), /fixture-user/);
      const asked = c.serverRequests.find((r) => r.method === 'sampling/createMessage')!;
      assert.match(String(asked.id), /^g0~/, 'the client sees an id naming the backend');
    });
  });

  it('round-trips sampling from a JSON-mode backend (through the multiplexed GET stream)', async () => {
    await withClient(gateway.url, BOTH, async (c) => {
      assert.match(textOf(await c.client.callTool({ name: 'beta_sample', arguments: { prompt: 'over the stream' } })), /sampled: over the stream/);
      assert.ok(c.serverRequests.some((r) => r.method === 'sampling/createMessage' && String(r.id).startsWith('g1~')));
    });
  });

  it('serves server-everything\'s sampling, elicitation and progress through the aggregate', async () => {
    await withClient(gateway.url, BOTH, async (c) => {
      const sampled = await c.client.callTool({ name: 'everything_trigger-sampling-request', arguments: { prompt: 'hello' } });
      assert.match(textOf(sampled), /sampled: .*hello/);
      const elicited = await c.client.callTool({ name: 'everything_trigger-elicitation-request', arguments: {} });
      assert.match(JSON.stringify(elicited.content), /Name: fixture-user/);
      const seen: number[] = [];
      await c.client.callTool({ name: 'everything_trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, CallToolResultSchema, {
        onprogress: (p) => seen.push(p.progress),
      });
      assert.deepEqual(seen, [1, 2, 3]);
    });
  });

  it('streams progress and logging from a routed call, and sets the log level on every backend', async () => {
    await withClient(gateway.url, {}, async (c) => {
      await c.client.setLoggingLevel('debug');
      assert.ok(alpha.received.some((r) => r.rpcMethods.includes('logging/setLevel')));
      assert.ok(beta.received.some((r) => r.rpcMethods.includes('logging/setLevel')));
      const seen: number[] = [];
      await c.client.callTool({ name: 'alpha_slow', arguments: { steps: 3, delayMs: 20 } }, CallToolResultSchema, { onprogress: (p) => seen.push(p.progress) });
      assert.deepEqual(seen, [1, 2, 3]);
      await c.client.callTool({ name: 'alpha_log', arguments: { level: 'warning', message: 'careful' } });
      const log = await c.waitForNotification('notifications/message', (n) => JSON.stringify(n.params).includes('careful'));
      assert.equal(log.params?.level, 'warning');
    });
  });

  it('forwards list_changed and lists the new tool afterwards', async () => {
    await withClient(gateway.url, {}, async (c) => {
      assert.ok(!(await c.client.listTools()).tools.some((t) => t.name === 'alpha_fresh_tool'));
      await c.client.callTool({ name: 'alpha_add_tool', arguments: { name: 'fresh_tool' } });
      await c.waitForNotification('notifications/tools/list_changed');
      await waitFor(async () => (await c.client.listTools()).tools.some((t) => t.name === 'alpha_fresh_tool'), 3000);
    });
  });

  it('forwards a cancellation to the backend that owns the request', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const controller = new AbortController();
      const call = c.client.callTool({ name: 'alpha_slow', arguments: { steps: 50, delayMs: 50 } }, CallToolResultSchema, { signal: controller.signal, onprogress: () => undefined });
      await c.waitForNotification('notifications/progress');
      controller.abort('stop');
      await assert.rejects(call);
      await waitFor(() => alpha.received.some((r) => r.rpcMethods.includes('notifications/cancelled')), 3000);
      assert.ok(!beta.received.some((r) => r.rpcMethods.includes('notifications/cancelled')), 'only the owner is told');
    });
  });

  it('resumes a request stream the backend closed, through the gateway (Last-Event-ID)', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const start = alpha.received.length;
      const seen: number[] = [];
      const result = await c.client.callTool({ name: 'alpha_slow', arguments: { steps: 4, delayMs: 50, closeStreamAfter: 1 } }, CallToolResultSchema, {
        onprogress: (p) => seen.push(p.progress),
      });
      assert.equal(textOf(result), 'done');
      assert.deepEqual(seen, [1, 2, 3, 4]);
      assert.ok(alpha.received.slice(start).some((r) => r.method === 'GET' && typeof r.headers['last-event-id'] === 'string'), 'alpha replayed its stream');
    });
  });

  it('DELETE ends every backend session', async () => {
    const c = await connectClient(gateway.url);
    await c.client.listTools();
    const before = { alpha: alpha.sessions(), beta: beta.sessions() };
    await c.close();
    await waitFor(() => alpha.sessions() === before.alpha - 1 && beta.sessions() === before.beta - 1, 3000);
    const res = await post(gateway.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { 'mcp-session-id': c.transport.sessionId ?? 'gone' });
    assert.equal(res.status, 404, 'the session is gone: clients re-initialize');
  });

  it('refuses a request without a session id (400) and an unknown one (404)', async () => {
    const missing = await post(gateway.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    assert.equal(missing.status, 400);
    assert.match(JSON.stringify(missing.json), /Mcp-Session-Id header is required/);
    const unknown = await post(gateway.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { 'mcp-session-id': 'not-a-session' });
    assert.equal(unknown.status, 404);
    assert.deepEqual((unknown.json as { error: { code: number } }).error.code, -32001);
  });

  it('reports every backend with its health and tool count at /status', async () => {
    const status = (await (await fetch(new URL('/status', gateway.url))).json()) as { mode: string; backends: { name: string; health: string; toolCount: number | null }[] };
    assert.equal(status.mode, 'aggregated');
    assert.deepEqual(status.backends.map((b) => [b.name, b.health]), [['alpha', 'healthy'], ['beta', 'healthy'], ['everything', 'healthy']]);
    assert.equal(status.backends.find((b) => b.name === 'beta')?.toolCount, 4);
  });
});

describe('aggregated: pagination', () => {
  let one: PaginatingServer;
  let two: PaginatingServer;
  let gateway: RunningVmcp;

  before(async () => {
    one = await startPaginatingServer({ name: 'one', tools: 23, pageSize: 10 });
    two = await startPaginatingServer({ name: 'two', tools: 12, pageSize: 5 });
    gateway = await startTestGateway({
      backends: [{ name: 'one', url: one.url }, { name: 'two', url: two.url }],
      config: 'aggregation: {pageSize: 8}',
    });
  });
  after(async () => {
    await gateway.stop();
    await one.close();
    await two.close();
  });

  it('follows every backend\'s cursors, and pages the merged list with its own cursor', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const names: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await c.client.listTools(cursor === undefined ? {} : { cursor });
        names.push(...page.tools.map((t) => t.name));
        cursor = page.nextCursor;
        pages++;
      } while (cursor !== undefined);
      assert.equal(names.length, 35);
      assert.equal(new Set(names).size, 35);
      assert.equal(pages, 5);
      assert.ok(names.includes('one_tool_022') && names.includes('two_tool_011'));
      assert.equal(one.received.filter((r) => r.rpcMethods.includes('tools/list')).length >= 3, true, 'three pages fetched from one');
      assert.equal(textOf(await c.client.callTool({ name: 'two_tool_007', arguments: {} })), 'two/tool_007');
      await assert.rejects(c.client.listTools({ cursor: 'bogus' }), (err: unknown) => err instanceof McpError && err.code === -32602);
      // Cursors are not signed: one the gateway never issued (not a page start, past the end,
      // absurd) is refused, so a client cannot pick offsets (nor grow the page cache with them).
      for (const forged of ['0.3', '0.35', '0.800', '0.99999999999999999999', '1.8']) {
        await assert.rejects(
          c.client.listTools({ cursor: Buffer.from(forged).toString('base64url') }),
          (err: unknown) => err instanceof McpError && err.code === -32602,
          forged,
        );
      }
    });
  });
});
