/**
 * What a backend answers is bounded in bytes and time, and a backend that breaks a bound fails
 * alone. A hostile backend streams one SSE event that never ends, hundreds
 * of MiB as fast as the gateway reads: in aggregated mode next to a healthy SDK backend, and in
 * transparent mode with an onResponse hook (so the gateway reads the stream). Its call gets a
 * JSON-RPC error naming it and the bound, the other calls are answered meanwhile, the health state
 * says why, the process's memory stays bounded, and the session carries on. A backend that
 * answers initialize or tools/list with an SSE head and then nothing no longer holds every
 * client's initialize or list: they answer after the backend's deadline, with the others
 * (bestEffort) or with an error naming it (fail). A routed call, the client's own, is not cut by
 * that deadline; a call the gateway relays round by round for its client ends when that client
 * leaves.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Plugin } from '../../core/plugin-api/plugin.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient, textOf, type ConnectedClient } from '../fixtures/client.ts';
import { answerJson, answerSilently, floodUnterminatedEvent, startScriptedBackend, type ScriptedBackend } from '../fixtures/scripted-backend.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';

/** What the hostile backend sends of its one event: far more than any bound, as fast as it is read. */
const FLOOD_BYTES = 400 * 1024 * 1024;
const MiB = 1024 * 1024;

interface Status {
  backends: { name: string; health: string; lastError: string | null }[];
}

async function statusOf(gateway: RunningVmcp, name: string): Promise<Status['backends'][number] | undefined> {
  const status = (await (await fetch(new URL('/status', gateway.url))).json()) as Status;
  return status.backends.find((b) => b.name === name);
}

/** The highest RSS of this process (gateway, backends and client all live in it) while `run` runs, sampled every 20 ms. */
async function peakRss<T>(run: () => Promise<T>): Promise<{ value: T; before: number; peak: number }> {
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  try {
    const value = await run();
    return { value, before, peak: Math.max(peak, process.memoryUsage.rss()) };
  } finally {
    clearInterval(sampler);
  }
}

/** The error `promise` rejects with (an McpError: the JSON-RPC error the client got). */
async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof McpError, String(err));
    return err;
  }
  assert.fail('expected a JSON-RPC error');
}

/** Calls `call` one after the other until `done` settles; how many were answered before it did. */
async function callsWhile(done: Promise<unknown>, call: () => Promise<void>): Promise<number> {
  let settled = false;
  void done.then(
    () => (settled = true),
    () => (settled = true),
  );
  let answered = 0;
  while (!settled) {
    await call();
    if (!settled) answered++;
  }
  return answered;
}

describe('a backend whose SSE event never ends', () => {
  let hostile: ScriptedBackend;
  let healthy: SdkServer;
  /** What the hostile backend wrote of its last flood, once it ended (the gateway stopped reading). */
  let flooded: Promise<number> = Promise.resolve(0);
  const honest = (): ScriptedBackend['script'] => ({ res, id }) => answerJson(res, id, { content: [{ type: 'text', text: 'hostile ran' }] });

  before(async () => {
    hostile = await startScriptedBackend('hostile');
    healthy = await startSdkServer({ name: 'healthy' });
  });
  after(async () => {
    await hostile.close();
    await healthy.close();
  });

  function flood(): void {
    hostile.script = ({ res }) => {
      flooded = floodUnterminatedEvent(res, FLOOD_BYTES);
    };
  }

  it('aggregated: its call gets a JSON-RPC error naming it and the bound; the healthy backend answers meanwhile; memory stays bounded; the session goes on', { timeout: 120_000 }, async () => {
    const gateway = await startTestGateway({
      backends: [
        { name: 'hostile', url: hostile.url },
        { name: 'healthy', url: healthy.url },
      ],
      // A bound larger than the default, for a longer flood: the healthy backend's calls run meanwhile.
      config: 'operational: {maxBackendResponseSize: 128Mi, failureHandling: {healthCheckInterval: 0s}}',
    });
    let c: ConnectedClient | null = null;
    try {
      c = await connectClient(gateway.url);
      const client = c.client;
      flood();
      const { value, before, peak } = await peakRss(async () => {
        const hostileCall = client.callTool({ name: 'hostile_run', arguments: {} }, undefined, { timeout: 60_000 });
        const answered = await callsWhile(hostileCall, async () => {
          assert.equal(textOf(await client.callTool({ name: 'healthy_echo', arguments: { text: 'still here' } }, undefined, { timeout: 10_000 })), 'healthy: still here');
        });
        return { error: await rpcError(hostileCall), answered };
      });
      console.log(`aggregated: ${value.answered} healthy calls answered during the flood; RSS ${Math.round(before / MiB)} MiB before, ${Math.round(peak / MiB)} MiB at most`);
      assert.match(value.error.message, /backend "hostile" sent an answer larger than 128 MiB \(operational\.maxBackendResponseSize\)/);
      assert.ok(value.answered >= 1, 'the healthy backend answered while the hostile one streamed');
      assert.ok(peak - before < 768 * MiB, `RSS grew by ${Math.round((peak - before) / MiB)} MiB`);
      // The gateway stopped reading: the backend could not write its whole flood.
      assert.ok((await flooded) < FLOOD_BYTES);
      assert.match((await statusOf(gateway, 'hostile'))?.lastError ?? '', /larger than 128 MiB \(operational\.maxBackendResponseSize\)/);
      // The session goes on, with both backends.
      hostile.script = honest();
      assert.equal(textOf(await client.callTool({ name: 'hostile_run', arguments: {} })), 'hostile ran');
      assert.equal(textOf(await client.callTool({ name: 'healthy_echo', arguments: { text: 'after' } })), 'healthy: after');
    } finally {
      hostile.script = honest();
      await c?.close();
      await gateway.stop();
    }
  });

  it('aggregated, a fan-out call the gateway makes for itself (tools/list): that backend is left out, the list has the others', { timeout: 120_000 }, async () => {
    const gateway = await startTestGateway({
      backends: [
        { name: 'hostile', url: hostile.url },
        { name: 'healthy', url: healthy.url },
      ],
      config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    let c: ConnectedClient | null = null;
    try {
      c = await connectClient(gateway.url);
      hostile.listTools = ({ res }) => {
        flooded = floodUnterminatedEvent(res, FLOOD_BYTES);
      };
      const { value: names, before, peak } = await peakRss(async () => (await c!.client.listTools(undefined, { timeout: 60_000 })).tools.map((t) => t.name));
      console.log(`aggregated tools/list: RSS ${Math.round(before / MiB)} MiB before, ${Math.round(peak / MiB)} MiB at most`);
      assert.ok(names.includes('healthy_echo'));
      assert.ok(!names.some((name) => name.startsWith('hostile_')));
      assert.ok(peak - before < 768 * MiB, `RSS grew by ${Math.round((peak - before) / MiB)} MiB`);
      assert.ok((await flooded) < FLOOD_BYTES);
      assert.match((await statusOf(gateway, 'hostile'))?.lastError ?? '', /backend "hostile" sent an answer larger than 32 MiB/);
    } finally {
      hostile.listTools = ({ res, id }) => answerJson(res, id, { tools: [{ name: 'run', inputSchema: { type: 'object' } }] });
      await c?.close();
      await gateway.stop();
    }
  });

  it('aggregated, a list in pages: the pages are bounded in all, as one answer', { timeout: 60_000 }, async () => {
    const gateway = await startTestGateway({
      backends: [
        { name: 'hostile', url: hostile.url },
        { name: 'healthy', url: healthy.url },
      ],
      config: 'operational: {maxBackendResponseSize: 1Mi, failureHandling: {healthCheckInterval: 0s}}',
    });
    let c: ConnectedClient | null = null;
    let pages = 0;
    try {
      c = await connectClient(gateway.url);
      // Each page well under the bound, and always one more.
      const description = 'd'.repeat(200 * 1024);
      hostile.listTools = ({ res, id }) => {
        pages++;
        answerJson(res, id, { tools: [{ name: `run${pages}`, description, inputSchema: { type: 'object' } }], nextCursor: `page-${pages}` });
      };
      const names = (await c.client.listTools(undefined, { timeout: 30_000 })).tools.map((t) => t.name);
      assert.ok(names.includes('healthy_echo'));
      assert.ok(!names.some((name) => name.startsWith('hostile_')), 'the hostile backend is left out');
      assert.ok(pages <= 6, `${pages} pages were asked for`);
    } finally {
      hostile.listTools = ({ res, id }) => answerJson(res, id, { tools: [{ name: 'run', inputSchema: { type: 'object' } }] });
      await c?.close();
      await gateway.stop();
    }
  });

  it('aggregated, on its GET stream: that stream is cut at one event\'s bound, the client\'s stream goes on with the other backends', { timeout: 120_000 }, async () => {
    const gateway = await startTestGateway({
      backends: [
        { name: 'hostile', url: hostile.url },
        { name: 'healthy', url: healthy.url },
      ],
      config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    let c: ConnectedClient | null = null;
    let floods = 0;
    try {
      hostile.stream = (_req, res) => {
        floods++;
        flooded = floodUnterminatedEvent(res, FLOOD_BYTES);
      };
      const { value, before, peak } = await peakRss(async () => {
        c = await connectClient(gateway.url);
        assert.equal(await c.standaloneStream, 200);
        while (floods === 0) await new Promise((resolve) => setTimeout(resolve, 20));
        const written = await flooded;
        // The other backend's events still reach the client on its stream.
        await c.client.callTool({ name: 'healthy_add_tool', arguments: { name: 'late' } });
        await c.waitForNotification('notifications/tools/list_changed', undefined, 10_000);
        return written;
      });
      console.log(`GET stream: the gateway read ${Math.round(value / MiB)} MiB of one event; RSS ${Math.round(before / MiB)} MiB before, ${Math.round(peak / MiB)} MiB at most`);
      assert.ok(value < FLOOD_BYTES, 'the gateway stopped reading the event');
      assert.ok(peak - before < 768 * MiB, `RSS grew by ${Math.round((peak - before) / MiB)} MiB`);
    } finally {
      hostile.stream = null;
      await (c as ConnectedClient | null)?.close();
      await gateway.stop();
    }
  });

  it('transparent with an onResponse hook: its call gets a JSON-RPC error naming it and the bound (default 32 MiB); other requests are answered; the session goes on', { timeout: 120_000 }, async () => {
    const seen: string[] = [];
    const observer: Plugin = { name: 'observer', onResponse: { methods: ['tools/call'], handle: (_ctx, response) => void seen.push(JSON.stringify(response).slice(0, 100)) } };
    const gateway = await startTestGateway({
      backends: [{ name: 'hostile', url: hostile.url }],
      plugins: [{ definition: { name: observer.name, create: () => observer }, config: {}, source: 'code' }],
    });
    let c: ConnectedClient | null = null;
    try {
      c = await connectClient(gateway.url);
      const client = c.client;
      flood();
      const { value, before, peak } = await peakRss(async () => {
        const hostileCall = client.callTool({ name: 'run', arguments: {} }, undefined, { timeout: 60_000 });
        const answered = await callsWhile(hostileCall, async () => {
          assert.deepEqual((await client.listTools(undefined, { timeout: 10_000 })).tools.map((t) => t.name), ['run']);
        });
        return { error: await rpcError(hostileCall), answered };
      });
      console.log(`transparent: ${value.answered} other requests answered during the flood; RSS ${Math.round(before / MiB)} MiB before, ${Math.round(peak / MiB)} MiB at most`);
      assert.match(value.error.message, /backend "hostile" sent an answer larger than 32 MiB \(operational\.maxBackendResponseSize\)/);
      assert.ok(peak - before < 512 * MiB, `RSS grew by ${Math.round((peak - before) / MiB)} MiB`);
      assert.ok((await flooded) < FLOOD_BYTES);
      hostile.script = honest();
      assert.equal(textOf(await client.callTool({ name: 'run', arguments: {} })), 'hostile ran');
      assert.match(seen.at(-1) ?? '', /hostile ran/, 'the hook saw the honest answer');
    } finally {
      hostile.script = honest();
      await c?.close();
      await gateway.stop();
    }
  });
});

describe('a backend that starts its answer and never ends it', () => {
  let silent: ScriptedBackend;
  let healthy: SdkServer;

  before(async () => {
    silent = await startScriptedBackend('silent');
    healthy = await startSdkServer({ name: 'healthy' });
  });
  after(async () => {
    await silent.close();
    await healthy.close();
  });

  /** A gateway in front of `silent` (its spec.timeout 1s: the whole answer's deadline too, by default) and `healthy`. */
  function gatewayWith(mode: 'bestEffort' | 'fail', operational = ''): Promise<RunningVmcp> {
    return startTestGateway({
      backends: [
        { name: 'silent', url: silent.url, timeout: '1s' },
        { name: 'healthy', url: healthy.url },
      ],
      config: `operational: {${operational}failureHandling: {healthCheckInterval: 0s, partialFailureMode: ${mode}}}`,
    });
  }

  it('initialize, bestEffort: answered after the backend\'s deadline with the others, the silent one named; its health says why', { timeout: 60_000 }, async () => {
    silent.initialize = ({ res }) => answerSilently(res);
    const gateway = await gatewayWith('bestEffort');
    let c: ConnectedClient | null = null;
    try {
      const started = performance.now();
      c = await connectClient(gateway.url);
      console.log(`initialize with a silent backend (bestEffort): ${Math.round(performance.now() - started)} ms`);
      assert.match(c.client.getInstructions() ?? '', /silent \(backend "silent" did not complete its answer within 1000 ms \(operational\.timeouts\)\)/);
      assert.equal(textOf(await c.client.callTool({ name: 'healthy_echo', arguments: { text: 'served' } })), 'healthy: served');
      const health = await statusOf(gateway, 'silent');
      assert.equal(health?.health, 'unhealthy');
      assert.match(health?.lastError ?? '', /did not complete its answer within 1000 ms/);
    } finally {
      await c?.close();
      await gateway.stop();
    }
  });

  it('initialize, fail: a JSON-RPC error naming the silent backend, after its deadline', { timeout: 60_000 }, async () => {
    silent.initialize = ({ res }) => answerSilently(res);
    const gateway = await gatewayWith('fail', 'timeouts: {perWorkload: {silent: 1500ms}}, ');
    try {
      const started = performance.now();
      const answer = await post(gateway.url, INITIALIZE);
      console.log(`initialize with a silent backend (fail): ${Math.round(performance.now() - started)} ms`);
      assert.equal(answer.status, 200, answer.text);
      const body = answer.json as { error?: { message: string; data?: { missing?: string[] } } };
      assert.match(body.error?.message ?? '', /backends unavailable: silent \(backend "silent" did not complete its answer within 1500 ms \(operational\.timeouts\)\)/);
      assert.deepEqual(body.error?.data?.missing, ['silent']);
    } finally {
      await gateway.stop();
    }
  });

  for (const mode of ['bestEffort', 'fail'] as const) {
    it(`tools/list (${mode}): answered after the backend's deadline with what the others have`, { timeout: 60_000 }, async () => {
      const fresh = await startScriptedBackend('silent');
      fresh.listTools = ({ res }) => answerSilently(res);
      const gateway = await startTestGateway({
        backends: [
          { name: 'silent', url: fresh.url },
          { name: 'healthy', url: healthy.url },
        ],
        config: `operational: {timeouts: {default: 1s}, failureHandling: {healthCheckInterval: 0s, partialFailureMode: ${mode}}}`,
      });
      let c: ConnectedClient | null = null;
      try {
        c = await connectClient(gateway.url);
        const started = performance.now();
        const names = (await c.client.listTools(undefined, { timeout: 30_000 })).tools.map((t) => t.name);
        console.log(`tools/list with a silent backend (${mode}): ${Math.round(performance.now() - started)} ms`);
        assert.ok(names.includes('healthy_echo'));
        assert.ok(!names.some((name) => name.startsWith('silent_')));
        assert.match((await statusOf(gateway, 'silent'))?.lastError ?? '', /backend "silent" did not complete its answer within 1000 ms/);
      } finally {
        await c?.close();
        await gateway.stop();
        await fresh.close();
      }
    });
  }

  it('a routed tools/call is the client\'s own: it runs past that deadline, as long as the backend answers', { timeout: 60_000 }, async () => {
    const gateway = await gatewayWith('bestEffort', 'timeouts: {default: 1s}, ');
    let c: ConnectedClient | null = null;
    try {
      silent.initialize = ({ res }) => answerSilently(res);
      c = await connectClient(gateway.url);
      const started = performance.now();
      const result = await c.client.callTool({ name: 'healthy_slow', arguments: { steps: 5, delayMs: 500 } }, undefined, { onprogress: () => undefined, timeout: 30_000 });
      assert.equal(textOf(result), 'done');
      assert.ok(performance.now() - started > 2000, 'the call took longer than the 1 s deadline');
    } finally {
      await c?.close();
      await gateway.stop();
    }
  });
});

describe('a call the gateway relays for its client (a modern backend asks a legacy client for input)', () => {
  let modern: Server;
  let url: string;
  /** Resolves when the backend's connection of the retried call (the second round) closes. */
  let retryClosed: Promise<void>;
  let retried: () => void = () => undefined;

  before(async () => {
    // A 2026-07-28 backend: its tool asks who the user is (input_required), and when asked again
    // with the answer, takes for ever (a long-running call).
    modern = createServer((req, res) => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        const message = JSON.parse(text) as { id?: unknown; method: string; params?: { inputResponses?: unknown } };
        const answer = (result: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
        if (message.id === undefined) return void res.writeHead(202).end();
        if (message.method === 'server/discover') return answer({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, resultType: 'complete' });
        if (message.method === 'tools/list') return answer({ tools: [{ name: 'ask', inputSchema: { type: 'object' } }], resultType: 'complete' });
        if (message.method !== 'tools/call') return answer({ resultType: 'complete' });
        if (message.params?.inputResponses === undefined) {
          return answer({ resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create', params: { message: 'who?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } } }, requestState: 'asked' });
        }
        res.on('close', () => retried());
      });
    });
    await new Promise<void>((resolve) => modern.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(modern.address() as AddressInfo).port}/mcp`;
  });
  after(async () => {
    modern.closeAllConnections();
    await new Promise<void>((resolve) => modern.close(() => resolve()));
  });

  it('its round in flight to the backend ends when the client leaves (it is not timed: only its client bounds it)', { timeout: 60_000 }, async () => {
    retryClosed = new Promise<void>((resolve) => (retried = resolve));
    const healthy = await startSdkServer({ name: 'healthy' });
    const gateway = await startTestGateway({
      backends: [
        { name: 'm', url },
        { name: 'healthy', url: healthy.url },
      ],
      config: 'operational: {timeouts: {default: 1s}, failureHandling: {healthCheckInterval: 0s}}',
    });
    const leave = new AbortController();
    try {
      const init = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'leaver', version: '1' } } }));
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
      await post(gateway.url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers);
      const call = await fetch(gateway.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'm_ask', arguments: {} } }), signal: leave.signal });
      assert.equal(call.headers.get('content-type'), 'text/event-stream');
      // The gateway asks the client on the call's stream; the client answers.
      const reader = call.body!.getReader();
      let seen = '';
      while (!/elicitation\/create/.test(seen)) seen += new TextDecoder().decode((await reader.read()).value);
      const asked = JSON.parse(/data: (.*)/.exec(seen)![1]!) as { id: string };
      await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'Ann' } } }), headers);
      // The second round runs past the 1 s deadline of the gateway's own calls: it is the client's call.
      const closedEarly = await Promise.race([retryClosed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2000))]);
      assert.equal(closedEarly, false, 'the round was cut while its client waited');
      // The client leaves: the round to the backend ends with it.
      leave.abort();
      const closed = await Promise.race([retryClosed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000))]);
      assert.equal(closed, true, 'the backend connection of the round stayed open after the client left');
    } finally {
      leave.abort();
      await gateway.stop();
      await healthy.close();
    }
  });
});

