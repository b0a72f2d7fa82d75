/**
 * Hostile stdio children through the real gateway (in this process, so its memory is this
 * process's): a line that never ends and a flood of lines that are not JSON-RPC, at the child's
 * start and in the middle of a call, with `operational.maxBackendResponseSize: 1Mi`; and floods of
 * stderr. The call fails with the reason, naming the backend; the gateway's memory stays bounded
 * (its peak RSS while eight children flood at once); stderr reaches the log with the backend's
 * name, bounded (100 lines per 10 s, then one entry counting the rest; a line cut at 4 KiB); the
 * other backends, and the same backend's next child, keep serving.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient, textOf, withClient, type ConnectedClient } from '../fixtures/client.ts';
import { waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { captureLog } from '../store/helpers/log.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { failureOf, fixtureBackend, inspectChild, waitGone } from '../helpers/stdio-backends.ts';

const MiB = 1024 * 1024;
const LONG_LINE = /backend "(\w+)" was ended: it wrote a line longer than 1 MiB to stdout/;
const NOT_JSON_RPC = /backend "(\w+)" was ended: it wrote more than 64 lines that are not JSON-RPC to stdout within 10 s/;
/** Sessions (children) flooding at once. */
const FLOODS = 8;
/** What the gateway's RSS may grow by while they flood: each holds at most 1 MiB of a line (bounded), the rest is slack. */
const RSS_GROWTH_BOUND = 96 * MiB;

/** Runs `body` while sampling this process's RSS; returns its peak growth over the RSS before. */
async function peakRssGrowth(body: () => Promise<void>): Promise<number> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  try {
    await body();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, process.memoryUsage().rss) - before;
}

describe('hostile stdio output through the gateway (maxBackendResponseSize 1Mi)', () => {
  let web: SdkServer;
  let gateway: RunningVmcp;
  const captured = captureLog('info');
  const lines = (backend: string, stream?: string) => captured.lines().filter((l) => l['backend'] === backend && (stream === undefined || l['stream'] === stream));

  before(async () => {
    web = await startSdkServer({ name: 'web', tools: ['echo'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'flood', transport: fixtureBackend([], `stdio: {maxProcesses: ${FLOODS + 2}}`) },
        { name: 'longline', transport: fixtureBackend(['--long-line']) },
        { name: 'garbage', transport: fixtureBackend(['--non-json=100000']) },
        { name: 'noisy', transport: fixtureBackend() },
        { name: 'wide', transport: fixtureBackend() },
        { name: 'web', url: web.url },
      ],
      config: 'operational: {maxBackendResponseSize: 1Mi}',
      log: captured.log,
    });
  });
  after(async () => {
    await gateway?.stop();
    await web?.close();
  });

  it('a line that never ends, mid-call in eight sessions at once: each call fails naming the bound, memory stays bounded, the next call works', async (t) => {
    const clients: ConnectedClient[] = [];
    try {
      for (let i = 0; i < FLOODS; i++) clients.push(await connectClient(gateway.url));
      const pids = await Promise.all(clients.map(async (c) => (await inspectChild(c, 'flood')).pid));
      const failures: string[] = [];
      const growth = await peakRssGrowth(async () => {
        const calls = clients.map((c) => failureOf(c.client.callTool({ name: 'flood_flood', arguments: { what: 'long-line' } })));
        for (const failure of await Promise.all(calls)) failures.push(failure.message);
      });
      for (const message of failures) assert.match(message, LONG_LINE);
      assert.ok(failures.every((message) => LONG_LINE.exec(message)?.[1] === 'flood'));
      t.diagnostic(`peak RSS growth while ${FLOODS} children flooded: ${(growth / MiB).toFixed(1)} MiB`);
      assert.ok(growth < RSS_GROWTH_BOUND, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`);
      await waitGone(pids);
      for (const c of clients) assert.equal(textOf(await c.client.callTool({ name: 'flood_echo', arguments: { text: 'after' } })), 'after');
      assert.match(textOf(await clients[0]!.client.callTool({ name: 'web_echo', arguments: { text: 'web' } })), /web$/);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('lines that are not JSON-RPC, mid-call: the call fails naming the flood; at most 65 of them are logged', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const pid = (await inspectChild(c, 'flood')).pid;
      const before = lines('flood').filter((l) => String(l['msg']).includes('that is not JSON-RPC')).length;
      const failure = await failureOf(c.client.callTool({ name: 'flood_flood', arguments: { what: 'non-json', lines: 100_000 } }));
      assert.match(failure.message, NOT_JSON_RPC);
      await waitGone([pid]);
      const logged = lines('flood').filter((l) => String(l['msg']).includes('that is not JSON-RPC')).length - before;
      assert.ok(logged > 0 && logged <= 65, `${logged} lines logged`);
      assert.equal(textOf(await c.client.callTool({ name: 'flood_echo', arguments: { text: 'clean again' } })), 'clean again');
    });
  });

  it('children that flood from their start: each call fails with the reason; the other backends keep serving', async () => {
    await withClient(gateway.url, {}, async (c) => {
      assert.match((await failureOf(c.client.callTool({ name: 'longline_echo', arguments: { text: 'x' } }))).message, LONG_LINE);
      assert.match((await failureOf(c.client.callTool({ name: 'garbage_echo', arguments: { text: 'x' } }))).message, NOT_JSON_RPC);
      assert.match(textOf(await c.client.callTool({ name: 'web_echo', arguments: { text: 'fine' } })), /fine$/);
      assert.equal(textOf(await c.client.callTool({ name: 'noisy_echo', arguments: { text: 'fine' } })), 'fine');
    });
  });

  it('stderr floods are logged with the backend name, bounded: 100 lines, then one entry counting the rest; long lines cut at 4 KiB', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const noisy = await inspectChild(c, 'noisy');
      assert.equal(textOf(await c.client.callTool({ name: 'noisy_flood', arguments: { what: 'stderr', lines: 5_000 } })), 'wrote 5000 lines to stderr');
      const wide = await inspectChild(c, 'wide');
      assert.equal(textOf(await c.client.callTool({ name: 'wide_flood', arguments: { what: 'stderr', lines: 3, bytes: 100_000 } })), 'wrote 3 lines to stderr');
      // The count of dropped lines comes at the end of the window, or when the child exits.
      await c.client.callTool({ name: 'noisy_exit', arguments: { code: 0 } });
      await waitGone([noisy.pid]);
      const summary = await waitFor(() => lines('noisy', 'stderr').find((l) => l['dropped'] !== undefined), 10_000);
      assert.equal(summary['dropped'], 4_900);
      assert.equal(summary['backendPid'], noisy.pid);
      assert.equal(summary['msg'], '4900 lines of backend "noisy"\'s stderr were dropped: at most 100 are logged per 10 s');
      const logged = lines('noisy', 'stderr').filter((l) => l['dropped'] === undefined);
      assert.equal(logged.length, 100);
      assert.equal(logged[0]!['msg'], '000000 eeeeeeeeeeeee');
      assert.ok(logged.every((l) => l['backendPid'] === noisy.pid && l['level'] === 30));

      const cut = await waitFor(() => (lines('wide', 'stderr').length >= 3 ? lines('wide', 'stderr') : null), 10_000);
      assert.equal(cut.length, 3);
      for (const line of cut) {
        assert.equal(line['cut'], true);
        assert.equal(line['backendPid'], wide.pid);
        assert.ok(String(line['msg']).length <= 4_096, `${String(line['msg']).length} characters logged`);
      }
      assert.equal(textOf(await c.client.callTool({ name: 'wide_echo', arguments: { text: 'served' } })), 'served');
    });
  });
});
