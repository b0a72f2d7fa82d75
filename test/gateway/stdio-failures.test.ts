/**
 * Stdio children that fail, end to end: the real gateway, real child processes (the fixture
 * server, test/fixtures/stdio-server.mjs), the official SDK client. A child that exits in the
 * middle of calls fails each of them with a JSON-RPC error naming the backend and its exit status,
 * and the same client session's next call starts a new child; a child that exits at its start
 * (before answering initialize) and a command that does not exist are named the same way, in
 * aggregated mode (the other backends keep serving) and alone (transparent: the client's
 * initialize fails with the reason).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient, textOf, withClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { captureLog } from '../store/helpers/log.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { failureOf, fixtureBackend, inspectChild, processGone, waitGone } from '../helpers/stdio-backends.ts';

const MISSING_COMMAND = 'gatehouse-no-such-command';
/** The JSON-RPC error the gateway answers a failed backend call with (the SDK's McpError). */
const INTERNAL_ERROR = -32603;

describe('stdio children that fail, aggregated with a streamable-HTTP backend', () => {
  let web: SdkServer;
  let gateway: RunningVmcp;
  const captured = captureLog('info');

  before(async () => {
    web = await startSdkServer({ name: 'web', tools: ['echo'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'crashy', transport: fixtureBackend() },
        { name: 'stillborn', transport: fixtureBackend(['--exit=7']) },
        { name: 'missing', transport: `transport: stdio\ncommand: ${MISSING_COMMAND}` },
        { name: 'web', url: web.url },
      ],
      log: captured.log,
    });
  });
  after(async () => {
    await gateway?.stop();
    await web?.close();
  });

  it('a child that exits mid-call fails every call under way naming the backend and its status; the next call on the session starts a new child', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const session = c.transport.sessionId;
      const first = await inspectChild(c, 'crashy');
      // A call under way at the child (its progress says so), then one that makes it exit unanswered.
      let started!: () => void;
      const underWay = new Promise<void>((resolve) => (started = resolve));
      const sleeping = failureOf(c.client.callTool({ name: 'crashy_sleep', arguments: { ms: 60_000 } }, CallToolResultSchema, { onprogress: () => started(), timeout: 60_000 }));
      await underWay;
      const crashed = await failureOf(c.client.callTool({ name: 'crashy_exit', arguments: { code: 5, answer: false } }));
      for (const failure of [crashed, await sleeping]) {
        assert.equal(failure.code, INTERNAL_ERROR);
        assert.match(failure.message, /^MCP error -32603: backend "crashy" exited with status 5$/);
        assert.deepEqual(failure.data, { error: 'backend_error', backend: 'crashy' });
      }
      await waitGone([first.pid]);

      const second = await inspectChild(c, 'crashy');
      assert.notEqual(second.pid, first.pid, 'a new child');
      assert.equal(processGone(second.pid), false);
      assert.equal(c.transport.sessionId, session, 'the same client session');
      assert.equal(textOf(await c.client.callTool({ name: 'crashy_echo', arguments: { text: 'healed' } })), 'healed');

      // A child that exits between calls (after its answer): the next call starts another too.
      assert.equal(textOf(await c.client.callTool({ name: 'crashy_exit', arguments: { code: 0 } })), 'exiting');
      await waitGone([second.pid]);
      const third = await inspectChild(c, 'crashy');
      assert.ok(![first.pid, second.pid].includes(third.pid));
    });
  });

  it('a child that exits at its start is named with its status; a command that does not exist names the spawn error; the other backends keep serving', async () => {
    await withClient(gateway.url, {}, async (c) => {
      const names = (await c.client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('crashy_echo') && names.includes('web_echo'), names.join(', '));
      assert.ok(!names.some((name) => name.startsWith('stillborn_') || name.startsWith('missing_')), `no tools of the failed backends: ${names.join(', ')}`);

      const stillborn = await failureOf(c.client.callTool({ name: 'stillborn_echo', arguments: { text: 'x' } }));
      assert.equal(stillborn.code, INTERNAL_ERROR);
      assert.match(stillborn.message, /backend "stillborn" exited with status 7/);
      const missing = await failureOf(c.client.callTool({ name: 'missing_echo', arguments: { text: 'x' } }));
      assert.equal(missing.code, INTERNAL_ERROR);
      assert.match(missing.message, new RegExp(`backend "missing" could not be started \\(spawn ${MISSING_COMMAND} ENOENT\\)`));

      assert.match(textOf(await c.client.callTool({ name: 'web_echo', arguments: { text: 'served' } })), /served$/);
      assert.equal(textOf(await c.client.callTool({ name: 'crashy_echo', arguments: { text: 'served too' } })), 'served too');
    });
    // A new session is served as well, and the log names each failure with its backend.
    await withClient(gateway.url, {}, async (c) => {
      assert.match(textOf(await c.client.callTool({ name: 'web_echo', arguments: { text: 'again' } })), /again$/);
    });
    const warned = captured.lines().filter((l) => l['level'] === 40).map((l) => `${String(l['backend'])}: ${String(l['msg'])}`);
    assert.ok(warned.includes(`missing: backend "missing" could not be started (spawn ${MISSING_COMMAND} ENOENT)`), warned.join('\n'));
    assert.ok(warned.includes('stillborn: backend "stillborn" exited with status 7'), warned.join('\n'));
  });
});

describe('a stdio backend alone (transparent) that cannot start', () => {
  for (const [what, transport, reason] of [
    ['exits at its start', fixtureBackend(['--exit=7']), 'exited with status 7'],
    ['is a command that does not exist', `transport: stdio\ncommand: ${MISSING_COMMAND}`, `could not be started \\(spawn ${MISSING_COMMAND} ENOENT\\)`],
  ] as const) {
    it(`${what}: the client's initialize fails naming the backend and why, and the next one says when it is tried again`, async () => {
      const gateway = await startTestGateway({ backends: [{ name: 'solo', transport }] });
      try {
        const first = await failureOf(connectClient(gateway.url));
        assert.match(first.message, new RegExp(`"message":"backend \\\\"solo\\\\" ${reason}"`));
        const second = await failureOf(connectClient(gateway.url));
        assert.match(second.message, new RegExp(`"message":"backend \\\\"solo\\\\" ${reason}; it is tried again in \\d+ s"`));
      } finally {
        await gateway.stop();
      }
    });
  }
});
