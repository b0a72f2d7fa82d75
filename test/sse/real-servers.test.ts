/**
 * The legacy HTTP+SSE channel against real MCP 2024-11-05 servers: the SDK's deprecated
 * `SSEServerTransport` with an `McpServer` (in this process, on loopback), and
 * `@modelcontextprotocol/server-everything` in its `sse` mode and the Python SDK's `MCPServer` with
 * its `sse` transport (child processes). The channel is
 * driven directly: initialize, notifications/initialized, tools/list, tools/call, the server's
 * notifications, what is sent along, the server ending its stream, the gateway closing it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import { ChannelClosed } from '../../core/upstream/channel/channel.ts';
import { acceptsConnections, freePort, REPO_ROOT, waitFor } from '../fixtures/processes.ts';
import { pythonClient } from '../helpers/python-client.ts';
import { skipIf } from '../store/helpers/service.ts';
import { INITIALIZE, openChannel, type OpenChannel } from './channel-harness.ts';
import { startSdkSseServer, type SdkSseServer } from './sdk-sse-server.ts';

const CREDENTIALS = ['authorization', 'Bearer outgoing-token', 'via', '1.1 gatehouse-test'];

/** initialize, then notifications/initialized: the session is ready. */
async function handshake(open: OpenChannel): Promise<Record<string, unknown>> {
  const answer = await open.request(1, 'initialize', INITIALIZE);
  assert.equal(answer.error, undefined, JSON.stringify(answer.error));
  assert.equal(open.send({ jsonrpc: '2.0', method: 'notifications/initialized' }), null);
  return answer.result as Record<string, unknown>;
}

function toolNames(result: unknown): string[] {
  return (result as { tools: { name: string }[] }).tools.map((tool) => tool.name);
}

function progressOf(messages: readonly JsonRpcMessage[], token: string): number[] {
  return messages
    .filter((m) => 'method' in m && m.method === 'notifications/progress' && m.params?.progressToken === token)
    .map((m) => (m as unknown as { params: { progress: number } }).params.progress);
}

describe('a legacy SSE channel to the SDK SSEServerTransport', () => {
  let server: SdkSseServer;
  before(async () => {
    server = await startSdkSseServer();
  });
  after(async () => {
    await server.close();
  });

  it('initializes, lists and calls tools, and delivers the server notifications', async () => {
    const open = openChannel(server.url, { headers: CREDENTIALS });
    try {
      const result = await handshake(open);
      assert.equal(result.protocolVersion, '2024-11-05');
      assert.deepEqual(result.serverInfo, { name: 'sdk-sse', version: '1.0.0' });
      const list = await open.request(2, 'tools/list');
      assert.deepEqual(toolNames(list.result).sort(), ['echo', 'steps']);
      const echo = await open.request(3, 'tools/call', { name: 'echo', arguments: { text: 'hi' } });
      assert.deepEqual(echo.result, { content: [{ type: 'text', text: 'echo: hi' }] });
      const steps = await open.request(4, 'tools/call', { name: 'steps', arguments: { count: 3 }, _meta: { progressToken: 'p1' } });
      assert.deepEqual(steps.result, { content: [{ type: 'text', text: 'done' }] });
      assert.deepEqual(progressOf(open.probe.messages, 'p1'), [1, 2, 3]);
      assert.equal(open.probe.misreport, null);
    } finally {
      await open.dispose();
    }
  });

  it('sends the opener headers on the stream, the exchange headers on each POST, and its own accept and content-type', async () => {
    const open = openChannel(server.url, { headers: [...CREDENTIALS, 'accept', 'text/html', 'content-length', '5'] });
    try {
      await open.request(1, 'initialize', INITIALIZE, ['authorization', 'Bearer per-call', 'x-request-id', 'r-1']);
      const get = server.heads.findLast((h) => h.method === 'GET')!;
      assert.equal(get.headers.authorization, 'Bearer outgoing-token');
      assert.equal(get.headers.via, '1.1 gatehouse-test');
      assert.equal(get.headers.accept, 'text/event-stream');
      assert.equal(get.headers['content-length'], undefined);
      const post = server.heads.findLast((h) => h.method === 'POST')!;
      assert.match(post.url, /^\/messages\?sessionId=[0-9a-f-]{36}$/);
      assert.equal(post.headers.authorization, 'Bearer per-call');
      assert.equal(post.headers['x-request-id'], 'r-1');
      assert.equal(post.headers['content-type'], 'application/json');
      assert.equal(post.headers.accept, 'application/json, text/event-stream');
      assert.equal(post.headers.host, new URL(server.url).host);
    } finally {
      await open.dispose();
    }
  });

  it('is closed once when the server ends its event stream, and refuses messages after', async () => {
    const open = openChannel(server.url);
    try {
      await handshake(open);
      const [transport] = [...server.sessions.values()].slice(-1);
      await transport!.close();
      const closed = await open.probe.closedWith();
      assert.ok(closed instanceof ChannelClosed);
      assert.equal(closed.message, 'closed its event stream');
      const refused = open.send({ jsonrpc: '2.0', id: 9, method: 'tools/list' });
      assert.equal(refused, closed);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(open.probe.closes.length, 1);
      assert.equal(open.probe.misreport, null);
    } finally {
      await open.dispose();
    }
  });

  it('is closed when a POST answers 404 (the server lost the session)', async () => {
    const open = openChannel(server.url);
    try {
      await handshake(open);
      const sessionId = [...server.sessions.keys()].at(-1)!;
      server.sessions.delete(sessionId);
      assert.equal(open.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), null);
      const closed = await open.probe.closedWith();
      assert.equal(closed.message, 'no longer knows its SSE session (HTTP 404)');
      assert.equal(open.probe.messages.filter((m) => !('method' in m) && m.id === 2).length, 0);
    } finally {
      await open.dispose();
    }
  });

  it('close() ends the event stream at the server and reports closed once', async () => {
    const open = openChannel(server.url);
    await handshake(open);
    const sessions = server.sessions.size;
    await open.channel.close();
    assert.equal(open.probe.closes.length, 1);
    assert.equal(open.probe.closes[0]!.message, 'was closed by the gateway');
    await waitFor(() => server.sessions.size === sessions - 1);
    await open.channel.close();
    assert.equal(open.probe.closes.length, 1);
    await open.dispose();
  });
});

/** A server process listening on `port` (its URL: http://127.0.0.1:<port>/sse), stopped by `stop`. */
async function startServerProcess(what: string, command: string, args: string[], port: number, env: NodeJS.ProcessEnv = {}): Promise<{ url: string; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4096)));
  await waitFor(() => child.exitCode === null && acceptsConnections(port), 15_000).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`${what} did not listen: ${String(err)}\n${stderr}`);
  });
  return {
    url: `http://127.0.0.1:${port}/sse`,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

describe('a legacy SSE channel to server-everything in its sse mode', () => {
  let server: { url: string; stop(): Promise<void> };
  let url: string;
  before(async () => {
    const port = await freePort();
    const entry = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    server = await startServerProcess('server-everything', process.execPath, [entry, 'sse'], port, { PORT: String(port) });
    url = server.url;
  });
  after(async () => {
    await server?.stop();
  });

  it('initializes, lists and calls tools, and delivers progress notifications', async () => {
    const open = openChannel(url, { headers: CREDENTIALS });
    try {
      const result = await handshake(open);
      assert.equal(result.protocolVersion, '2024-11-05');
      const list = await open.request(2, 'tools/list');
      const names = toolNames(list.result);
      assert.ok(names.includes('echo') && names.includes('trigger-long-running-operation'), names.join(', '));
      const echo = await open.request(3, 'tools/call', { name: 'echo', arguments: { message: 'over sse' } });
      assert.match(JSON.stringify(echo.result), /over sse/);
      const long = await open.request(4, 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 }, _meta: { progressToken: 'lr' } });
      assert.match(JSON.stringify(long.result), /completed/);
      assert.deepEqual(progressOf(open.probe.messages, 'lr'), [1, 2]);
      assert.equal(open.probe.closes.length, 0);
      assert.equal(open.probe.misreport, null);
    } finally {
      await open.dispose();
    }
  });

  it('serves two channels as two sessions', async () => {
    const one = openChannel(url);
    const two = openChannel(url);
    try {
      await Promise.all([handshake(one), handshake(two)]);
      const [a, b] = await Promise.all([one.request(5, 'tools/list'), two.request(5, 'tools/list')]);
      assert.deepEqual(toolNames(a.result), toolNames(b.result));
    } finally {
      await Promise.all([one.dispose(), two.dispose()]);
    }
  });
});

describe('a legacy SSE channel to the Python SDK MCPServer with its sse transport', () => {
  it('initializes, lists and calls a tool (notifications/initialized taken before the requests after it)', async (t) => {
    const found = pythonClient('a legacy SSE channel to the Python SDK server');
    if (skipIf(t, 'skip' in found ? found : null) || !('python' in found)) return;
    const port = await freePort();
    const server = await startServerProcess('the Python SSE server', found.python, [join(REPO_ROOT, 'test/python/sse_server.py'), String(port)], port);
    const open = openChannel(server.url);
    try {
      const result = await handshake(open);
      assert.equal(result.protocolVersion, '2024-11-05');
      // Sent at once after initialized (the Python SDK's version 1 refused a request that came before it).
      const [list, echo] = await Promise.all([open.request(2, 'tools/list'), open.request(3, 'tools/call', { name: 'echo', arguments: { text: 'hi' } })]);
      assert.deepEqual(toolNames(list.result), ['echo']);
      assert.match(JSON.stringify(echo.result), /py: hi/);
      assert.equal(open.probe.closes.length, 0);
    } finally {
      await open.dispose();
      await server.stop();
    }
  });
});
