/**
 * Aggregated mode when things break: a backend down at initialize (both partialFailureModes), a
 * backend killed in the middle of a call, a backend that restarts and forgets its sessions,
 * session expiry and the LRU bound, and health checks.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, textOf } from '../fixtures/client.ts';
import { freePort, spawnFixture, waitFor, type SpawnedFixture } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';

interface Status {
  backends: { name: string; health: string; consecutiveFailures: number; lastError: string | null; toolCount: number | null }[];
}

async function status(url: string): Promise<Status> {
  return (await (await fetch(new URL('/status', url))).json()) as Status;
}

describe('aggregated: failures', () => {
  let alpha: SdkServer;
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
  });
  after(async () => {
    await alpha.close();
  });

  it('bestEffort (default): a backend down at initialize is left out and named; the others are served', async () => {
    const port = await freePort();
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'down', url: `http://127.0.0.1:${port}/mcp` }] });
    try {
      const c = await connectClient(gateway.url);
      assert.match(c.client.getInstructions() ?? '', /Unavailable when this session started.*down \(backend "down" is unavailable \(connection refused\)\)/);
      const names = (await c.client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('alpha_echo') && !names.some((n) => n.startsWith('down_')));
      assert.equal(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'still here' } })), 'alpha: still here');
      await c.close();
    } finally {
      await gateway.stop();
    }
  });

  it('partialFailureMode fail: initialize fails naming the backend, and the opened sessions are closed', async () => {
    const port = await freePort();
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'down', url: `http://127.0.0.1:${port}/mcp` }],
      config: 'operational: {failureHandling: {partialFailureMode: fail}}',
    });
    try {
      const before = alpha.sessions();
      const res = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }));
      const body = res.json as { error: { code: number; message: string; data: { missing: string[] } } };
      assert.equal(body.error.code, -32603);
      assert.match(body.error.message, /backends unavailable: down \(backend "down" is unavailable \(connection refused\)\)/);
      assert.deepEqual(body.error.data.missing, ['down']);
      assert.equal(res.headers.get('mcp-session-id'), null);
      await waitFor(() => alpha.sessions() === before, 3000);
    } finally {
      await gateway.stop();
    }
  });

  it('a backend killed in the middle of a call: the pending call gets an error naming it, not a hang', async () => {
    let victim: SpawnedFixture | null = await spawnFixture('test/fixtures/sdk-server.ts', ['--port', '0', '--name', 'victim']);
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'victim', url: victim.url }] });
    try {
      const c = await connectClient(gateway.url);
      const call = c.client.callTool({ name: 'victim_slow', arguments: { steps: 50, delayMs: 100 } }, CallToolResultSchema, { onprogress: () => undefined });
      const outcome = call.then(() => null, (err: Error) => err); // settles while the kill is awaited
      await c.waitForNotification('notifications/progress');
      const started = Date.now();
      await victim.kill('SIGKILL');
      victim = null;
      const err = await outcome;
      assert.ok(err instanceof Error);
      assert.match(err.message, /backend "victim" failed \(connection reset\)/);
      assert.ok(Date.now() - started < 15_000);
      assert.equal(textOf(await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'ok' } })), 'alpha: ok', 'the others keep working');
      await c.close();
    } finally {
      await gateway.stop();
      await victim?.kill();
    }
  });

  it('a backend that restarted (and forgot its sessions) is re-initialized transparently', async () => {
    const port = await freePort();
    let phoenix = await spawnFixture('test/fixtures/sdk-server.ts', ['--port', String(port), '--name', 'phoenix']);
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'phoenix', url: phoenix.url }] });
    try {
      const c = await connectClient(gateway.url);
      assert.equal(textOf(await c.client.callTool({ name: 'phoenix_echo', arguments: { text: 'before' } })), 'phoenix: before');
      await phoenix.kill();
      phoenix = await spawnFixture('test/fixtures/sdk-server.ts', ['--port', String(port), '--name', 'phoenix']);
      assert.equal(textOf(await c.client.callTool({ name: 'phoenix_echo', arguments: { text: 'after' } })), 'phoenix: after');
      await c.close();
    } finally {
      await gateway.stop();
      await phoenix.kill();
    }
  });

  it('sessions expire after their TTL of inactivity (and their backend sessions are closed)', async () => {
    // A TTL of 2 s, touched every 1.2 s: alive for 2.4 s in all, which only a sliding TTL allows,
    // with 0.8 s to spare on every touch however slow the machine is.
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'alpha2', url: alpha.url }], config: 'session: {ttl: 2s}' });
    try {
      const before = alpha.sessions();
      const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
      const sessionId = c.transport.sessionId!;
      await c.client.listTools();
      await new Promise((resolve) => setTimeout(resolve, 1200));
      await c.client.listTools(); // sliding: this keeps it alive
      await new Promise((resolve) => setTimeout(resolve, 1200));
      await c.client.listTools();
      await c.close({ terminate: false });
      await waitFor(() => alpha.sessions() === before, 15_000);
      const res = await post(gateway.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { 'mcp-session-id': sessionId });
      assert.equal(res.status, 404);
    } finally {
      await gateway.stop();
    }
  });

  it('keeps at most maxSessions per process: the least recently used is evicted', async () => {
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }, { name: 'alpha2', url: alpha.url }], config: 'session: {maxSessions: 2}' });
    try {
      const clients = [];
      for (let i = 0; i < 3; i++) clients.push(await connectClient(gateway.url, { waitForStandaloneStream: false }));
      const first = clients[0]!.transport.sessionId!;
      const res = await post(gateway.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { 'mcp-session-id': first, 'mcp-protocol-version': '2025-11-25' });
      assert.equal(res.status, 404, 'the oldest session was evicted');
      assert.ok((await clients[2]!.client.listTools()).tools.length > 0);
      for (const c of clients) await c.close({ terminate: false });
    } finally {
      await gateway.stop();
    }
  });

  it('health checks mark a dead backend unhealthy and a recovered one healthy, with its tool count', async () => {
    const port = await freePort();
    let flaky: SpawnedFixture | null = await spawnFixture('test/fixtures/sdk-server.ts', ['--port', String(port), '--name', 'flaky']);
    const gateway = await startTestGateway({
      backends: [{ name: 'alpha', url: alpha.url }, { name: 'flaky', url: flaky.url }],
      config: 'operational: {failureHandling: {healthCheckInterval: 150ms, unhealthyThreshold: 2}}',
    });
    try {
      await waitFor(async () => (await status(gateway.url)).backends.every((b) => b.health === 'healthy'), 5000);
      assert.equal((await status(gateway.url)).backends.find((b) => b.name === 'flaky')?.toolCount, 12);
      await flaky.kill('SIGKILL');
      flaky = null;
      const down = await waitFor(async () => {
        const s = (await status(gateway.url)).backends.find((b) => b.name === 'flaky')!;
        return s.health === 'unhealthy' ? s : undefined;
      }, 5000);
      assert.ok(down.consecutiveFailures >= 2);
      assert.match(down.lastError ?? '', /flaky/);
      flaky = await spawnFixture('test/fixtures/sdk-server.ts', ['--port', String(port), '--name', 'flaky']);
      await waitFor(async () => (await status(gateway.url)).backends.find((b) => b.name === 'flaky')?.health === 'healthy', 5000);
    } finally {
      await gateway.stop();
      await flaky?.kill();
    }
  });
});
