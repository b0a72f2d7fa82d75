/**
 * Aggregated sessions that heal, with the official SDK client and real backends: the
 * everything-server (which answers an unknown session with HTTP 400, as its own launcher does)
 * and the SDK fixture server (the spec's 404), restarted mid-session; a backend down at
 * initialize that comes up later; one that stays down; a backend that answers HTTP errors.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, textOf, type ConnectedClient } from '../fixtures/client.ts';
import { freePort, spawnFixture, waitFor, type SpawnedFixture } from '../fixtures/processes.ts';
import type { UnknownSessionStyle } from '../fixtures/http-host.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';
import { rawExchange } from '../helpers/raw-http.ts';

interface Status {
  backends: { name: string; health: string; consecutiveFailures: number; lastError: string | null }[];
}

async function status(url: string): Promise<Status> {
  return (await (await fetch(new URL('/status', url))).json()) as Status;
}

async function toolNames(c: ConnectedClient): Promise<string[]> {
  return (await c.client.listTools()).tools.map((t) => t.name);
}

/** The error of a call the client expects to fail. */
async function callError(c: ConnectedClient, name: string, args: Record<string, unknown> = {}): Promise<McpError> {
  try {
    await c.client.callTool({ name, arguments: args });
  } catch (err) {
    assert.ok(err instanceof McpError, String(err));
    return err;
  }
  throw new Error(`${name} succeeded`);
}

/** A child backend on a fixed port, so that it can be restarted at the same address. */
class Restartable {
  #child: SpawnedFixture | null = null;
  constructor(
    readonly port: number,
    readonly script: string,
    readonly args: string[],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  async start(): Promise<this> {
    this.#child = await spawnFixture(this.script, ['--port', String(this.port), ...this.args]);
    return this;
  }

  async stop(): Promise<void> {
    await this.#child?.kill();
    this.#child = null;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }
}

async function everythingOn(port: number): Promise<Restartable> {
  return new Restartable(port, 'test/fixtures/everything-server.ts', []).start();
}

async function sdkOn(port: number, name: string, unknownSession?: UnknownSessionStyle): Promise<Restartable> {
  return new Restartable(port, 'test/fixtures/sdk-server.ts', ['--name', name, ...(unknownSession === undefined ? [] : ['--unknown-session', unknownSession])]).start();
}

/**
 * A backend that initializes and lists one tool, then answers every tools/call with HTTP
 * `status`, an HTML page and a header of its own: what a broken upstream or a proxy in front of
 * it sends. `body` replaces the page (a JSON-RPC answer, say); a ping is answered as MCP asks,
 * and `methods` lists every JSON-RPC method it was sent, in order.
 */
async function startRefusingBackend(status: number, body?: (id: number | string | undefined) => string): Promise<{ url: string; server: Server; methods: string[] }> {
  const methods: string[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const message = JSON.parse(text) as { id?: number | string; method: string };
      methods.push(message.method);
      const reply = (result: unknown): void => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'refusing-1' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      };
      if (message.method === 'initialize') return reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'refusing', version: '1' } });
      if (message.method === 'tools/list') return reply({ tools: [{ name: 'work', inputSchema: { type: 'object' } }] });
      if (message.method === 'ping') return reply({});
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      if (body !== undefined) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body(message.id));
        return;
      }
      res.writeHead(status, { 'content-type': 'text/html', 'x-powered-by': 'Express', 'set-cookie': 'backend=1' });
      res.end('<html><body>upstream exploded</body></html>');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server, methods };
}

describe('aggregated: sessions that heal', () => {
  let alpha: SdkServer;
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
  });
  after(async () => {
    await alpha.close();
  });

  it('a restarted backend rejoins the session for lists and for calls, whether it answers 400 (everything-server) or 404', async () => {
    const everything = await everythingOn(await freePort());
    const phoenix = await sdkOn(await freePort(), 'phoenix');
    const gateway = await startTestGateway({
      backends: [
        { name: 'alpha', url: alpha.url },
        { name: 'everything', url: everything.url },
        { name: 'phoenix', url: phoenix.url },
      ],
      config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    try {
      const c = await connectClient(gateway.url);
      // Both restart before the session ever listed: the list itself must heal.
      await everything.restart();
      await phoenix.restart();
      const names = await toolNames(c);
      for (const name of ['alpha_echo', 'everything_echo', 'phoenix_echo']) assert.ok(names.includes(name), `${name} in ${names.join()}`);
      assert.equal(textOf(await c.client.callTool({ name: 'everything_echo', arguments: { message: 'listed' } })), 'Echo: listed');

      // Restarted again, now with the list cached: the call heals.
      await everything.restart();
      await phoenix.restart();
      assert.equal(textOf(await c.client.callTool({ name: 'everything_echo', arguments: { message: 'healed' } })), 'Echo: healed');
      assert.equal(textOf(await c.client.callTool({ name: 'phoenix_echo', arguments: { text: 'healed' } })), 'phoenix: healed');
      assert.equal(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'untouched' } })), 'alpha: untouched');
      await c.close();
    } finally {
      await gateway.stop();
      await everything.stop();
      await phoenix.stop();
    }
  });

  it('a restarted backend announces itself on the GET stream: list_changed, and its stream reopens', async () => {
    const phoenix = await sdkOn(await freePort(), 'phoenix');
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'phoenix', url: phoenix.url }] });
    try {
      const c = await connectClient(gateway.url);
      assert.ok((await toolNames(c)).includes('phoenix_echo'));
      await phoenix.restart();
      assert.equal(textOf(await c.client.callTool({ name: 'phoenix_echo', arguments: { text: 'back' } })), 'phoenix: back');
      await c.waitForNotification('notifications/tools/list_changed');
      // The new backend session's own notifications reach the client again (add_tool emits one).
      const before = c.notifications.filter((n) => n.method === 'notifications/tools/list_changed').length;
      await c.client.callTool({ name: 'phoenix_add_tool', arguments: { name: 'fresh' } });
      await waitFor(() => c.notifications.filter((n) => n.method === 'notifications/tools/list_changed').length > before, 5000);
      assert.ok((await toolNames(c)).includes('phoenix_fresh'));
      await c.close();
    } finally {
      await gateway.stop();
      await phoenix.stop();
    }
  });

  const refusals = { 'invalid-or-missing': '400 "Invalid or missing session ID"', gone: 'a bare 410', 'rpc-error': 'HTTP 200 and a JSON-RPC error -32001 "Session not found" (its ping too)' } as const;
  for (const style of ['invalid-or-missing', 'gone', 'rpc-error'] as const) {
    it(`a restarted backend heals whatever words its refusal has: ${refusals[style]}, for calls, lists and its GET stream`, async () => {
      const phoenix = await sdkOn(await freePort(), 'phoenix', style);
      const gateway = await startTestGateway({
        backends: [{ name: 'alpha', url: alpha.url }, { name: 'phoenix', url: phoenix.url }],
        config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
      });
      try {
        const c = await connectClient(gateway.url);
        assert.equal(textOf(await c.client.callTool({ name: 'phoenix_echo', arguments: { text: 'before' } })), 'phoenix: before');
        // The first call after the restart is served (before: a JSON-RPC error naming the backend's refusal).
        await phoenix.restart();
        assert.equal(textOf(await c.client.callTool({ name: 'phoenix_echo', arguments: { text: 'after' } })), 'phoenix: after');
        await c.waitForNotification('notifications/tools/list_changed');
        // Its GET stream reopened on the new backend session: the backend's own notification reaches the client.
        const before = c.notifications.filter((n) => n.method === 'notifications/tools/list_changed').length;
        await c.client.callTool({ name: 'phoenix_add_tool', arguments: { name: 'fresh' } });
        await waitFor(() => c.notifications.filter((n) => n.method === 'notifications/tools/list_changed').length > before, 5000);
        // Restarted again with the list cached: the list heals too.
        await phoenix.restart();
        assert.ok((await toolNames(c)).includes('phoenix_echo'));
        await c.close();
      } finally {
        await gateway.stop();
        await phoenix.stop();
      }
    });
  }

  it("a 400 that is the request's own is answered as it is: the backend, asked with a ping, still knows the session", async () => {
    const refusing = await startRefusingBackend(400);
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'refusing', url: refusing.url }],
      config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    try {
      const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
      const err = await callError(c, 'refusing_work');
      assert.match(err.message, /backend "refusing" refused the request \(HTTP 400\)/);
      // Sent once, the session asked about once, and no new session opened for it.
      assert.deepEqual(refusing.methods.filter((m) => ['initialize', 'tools/call', 'ping'].includes(m)), ['initialize', 'tools/call', 'ping']);
      await c.close();
    } finally {
      await gateway.stop();
      await new Promise((resolve) => refusing.server.close(resolve));
    }
  });

  for (const status of [400, 404, 410]) {
    it(`a request the backend answered with a result is never sent again, even under HTTP ${status}`, async () => {
      const refusing = await startRefusingBackend(status, (id) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'ran' }] } }));
      const gateway = await startTestGateway({
        backends: [{ name: 'alpha', url: alpha.url }, { name: 'refusing', url: refusing.url }],
        config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
      });
      try {
        const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
        await callError(c, 'refusing_work');
        assert.deepEqual(refusing.methods.filter((m) => m === 'tools/call' || m === 'initialize'), ['initialize', 'tools/call']);
        await c.close();
      } finally {
        await gateway.stop();
        await new Promise((resolve) => refusing.server.close(resolve));
      }
    });
  }

  it('a backend down at initialize joins the live session when it comes up: list_changed, then its tools', async () => {
    const port = await freePort();
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'late', url: `http://127.0.0.1:${port}/mcp` }],
      config: 'operational: {failureHandling: {healthCheckInterval: 200ms, unhealthyThreshold: 1}}',
    });
    let late: Restartable | null = null;
    try {
      const c = await connectClient(gateway.url);
      assert.ok(!(await toolNames(c)).some((n) => n.startsWith('late_')));
      const early = await callError(c, 'late_echo', { text: 'x' });
      assert.match(early.message, /late_echo cannot be called now: backend "late" is unavailable \(connection refused\)/);

      late = await sdkOn(port, 'late');
      await c.waitForNotification('notifications/tools/list_changed', undefined, 10_000);
      assert.ok((await toolNames(c)).includes('late_echo'));
      assert.equal(textOf(await c.client.callTool({ name: 'late_echo', arguments: { text: 'joined' } })), 'late: joined');
      await c.close();
    } finally {
      await gateway.stop();
      await late?.stop();
    }
  });

  it('without health checks, a late backend joins on a request of the session once its retry is due', async () => {
    const port = await freePort();
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'late', url: `http://127.0.0.1:${port}/mcp` }],
      config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
    });
    let late: Restartable | null = null;
    try {
      const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
      late = await sdkOn(port, 'late');
      await waitFor(async () => (await toolNames(c)).includes('late_echo'), 10_000);
      assert.equal(textOf(await c.client.callTool({ name: 'late_echo', arguments: { text: 'joined' } })), 'late: joined');
      await c.close();
    } finally {
      await gateway.stop();
      await late?.stop();
    }
  });

  it('a backend that stays down: a clear error naming it, the others unaffected, /status from what sessions see', async () => {
    const phoenix = await sdkOn(await freePort(), 'phoenix');
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'phoenix', url: phoenix.url }],
      // No periodic checks: /status can only learn from the sessions' own requests.
      config: 'operational: {failureHandling: {healthCheckInterval: 0s, unhealthyThreshold: 2}}',
    });
    try {
      const c = await connectClient(gateway.url);
      assert.equal(textOf(await c.client.callTool({ name: 'phoenix_echo', arguments: { text: 'up' } })), 'phoenix: up');
      await phoenix.stop();
      for (let i = 0; i < 2; i++) {
        const err = await callError(c, 'phoenix_echo', { text: 'down' });
        assert.match(err.message, /backend "phoenix" is unavailable \(connection refused\)/);
      }
      assert.equal(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'fine' } })), 'alpha: fine');
      const phoenixStatus = (await status(gateway.url)).backends.find((b) => b.name === 'phoenix')!;
      assert.equal(phoenixStatus.health, 'unhealthy');
      assert.match(phoenixStatus.lastError ?? '', /phoenix/);
      await c.close();
    } finally {
      await gateway.stop();
      await phoenix.stop();
    }
  });

  for (const code of [401, 500]) {
    it(`a backend's HTTP ${code} is a JSON-RPC error naming it (HTTP 200), none of its headers or page`, async () => {
      const refusing = await startRefusingBackend(code);
      const gateway = await startTestGateway({
        backends: [{ name: 'alpha', url: alpha.url }, { name: 'refusing', url: refusing.url }],
        config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
      });
      try {
        const init = await post(gateway.url, INITIALIZE);
        const session = init.headers.get('mcp-session-id')!;
        const res = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'refusing_work', arguments: {} } }), {
          'mcp-session-id': session,
          'mcp-protocol-version': '2025-11-25',
        });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-powered-by'), null);
        assert.equal(res.headers.get('set-cookie'), null);
        assert.equal(res.headers.get('mcp-session-id'), session);
        const body = res.json as { id: number; error: { code: number; message: string; data: { backend: string; status: number } } };
        assert.equal(body.id, 7);
        assert.match(body.error.message, new RegExp(`backend "refusing" refused the request \\(HTTP ${code}\\)`));
        assert.deepEqual([body.error.data.backend, body.error.data.status], ['refusing', code]);
        assert.doesNotMatch(res.text, /upstream exploded/);
      } finally {
        await gateway.stop();
        await new Promise((resolve) => refusing.server.close(resolve));
      }
    });
  }

  it('routed and transparent SSE answers carry each stream header once', async () => {
    const aggregated = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'alpha2', url: alpha.url }] });
    const transparent = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }] });
    try {
      for (const [gateway, tool] of [[aggregated, 'alpha_echo'], [transparent, 'echo']] as const) {
        const init = await post(gateway.url, INITIALIZE);
        const session = init.headers.get('mcp-session-id')!;
        const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: { text: 'x' } } });
        const url = new URL(gateway.url);
        const request =
          `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
          `Mcp-Session-Id: ${session}\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
        const answer = await rawExchange(gateway.url, request, 3000, true);
        assert.equal(answer.status, 200);
        assert.match(answer.headLines.join('\n'), /content-type: text\/event-stream/i);
        for (const name of ['cache-control', 'x-accel-buffering', 'x-request-id', 'mcp-session-id']) {
          const lines = answer.headLines.filter((line) => line.toLowerCase().startsWith(`${name}:`));
          assert.ok(lines.length <= 1, `${name} appears ${lines.length} times: ${lines.join(' | ')}`);
        }
      }
    } finally {
      await aggregated.stop();
      await transparent.stop();
    }
  });
});
