/**
 * A stdio backend's child as a channel (core/upstream/stdio/child.ts), against the fixture server
 * (test/fixtures/stdio-server.mjs): messages both ways, a batch split, what the child gets (its
 * environment, its working directory), why it ended (an exit status, a signal, a failed start,
 * reported once and after the opener returned), and how `close` ends it and what it started.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { JsonRpcResponse } from '../../core/protocol/jsonrpc.ts';
import { ChannelClosed } from '../../core/upstream/channel/channel.ts';
import { waitFor } from '../fixtures/processes.ts';
import { isAlive, OpenedChild, stdioConfig, type Inspected } from './helpers/stdio-harness.ts';

const opened: OpenedChild[] = [];
after(async () => {
  await Promise.all(opened.map((o) => o.channel.close()));
});

function open(flags: readonly string[] = [], over: Parameters<typeof stdioConfig>[1] = {}): OpenedChild {
  const child = new OpenedChild('fx', stdioConfig(flags, over));
  opened.push(child);
  return child;
}

describe('a stdio child', () => {
  it('answers requests sent on its stdin, on its stdout', async () => {
    const child = open();
    const init = await child.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    assert.deepEqual((init.result as { serverInfo: unknown }).serverInfo, { name: 'stdio-fixture', version: '1.0.0' });
    const list = await child.request('tools/list');
    assert.deepEqual((list.result as { tools: { name: string }[] }).tools.map((t) => t.name), ['echo', 'inspect', 'exit', 'sleep', 'flood']);
    assert.equal(await child.tool('echo', { text: 'héllo\nwith a line break' }), 'héllo\nwith a line break');
    assert.equal(typeof child.channel.pid, 'number');
  });

  it('delivers a batch it writes message by message', async () => {
    const child = open();
    const batch = [
      { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'echo', arguments: { text: 'one' } } },
      { jsonrpc: '2.0', id: 'b', method: 'ping' },
    ];
    assert.equal(child.channel.send(JSON.stringify(batch), []), null);
    await waitFor(() => child.messages.length === 2);
    assert.deepEqual(child.messages.map((m) => (m as JsonRpcResponse).id), ['a', 'b']);
  });

  it('sends a message with line breaks (JSON whitespace) as one line', async () => {
    const child = open();
    assert.equal(child.channel.send('{\n"jsonrpc": "2.0",\r\n"id": 7,\n"method": "ping"\n}', []), null);
    await waitFor(() => child.messages.length === 1);
    assert.deepEqual(child.messages[0], { jsonrpc: '2.0', id: 7, result: {} });
  });

  it('gets its configured environment, PATH and HOME, and nothing else of the gateway\'s', async () => {
    process.env['GATEHOUSE_STDIO_TEST_SECRET'] = 'not for the child';
    try {
      const child = open([], { env: { FOO: 'bar', EMPTY: '' } });
      const { env } = (await child.tool('inspect')) as Inspected;
      const expected: Record<string, string> = { FOO: 'bar', EMPTY: '', PATH: process.env['PATH']! };
      if (process.env['HOME'] !== undefined) expected['HOME'] = process.env['HOME'];
      assert.deepEqual(env, expected);
      const own = open([], { env: { PATH: '/configured/bin', HOME: '/configured/home' } });
      assert.deepEqual(((await own.tool('inspect')) as Inspected).env, { PATH: '/configured/bin', HOME: '/configured/home' });
    } finally {
      delete process.env['GATEHOUSE_STDIO_TEST_SECRET'];
    }
  });

  it('runs in its configured working directory, else the gateway\'s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-stdio-'));
    try {
      const child = open([], { cwd: dir });
      assert.equal(((await child.tool('inspect')) as Inspected).cwd, realpathSync(dir));
      const other = open();
      assert.equal(((await other.tool('inspect')) as Inspected).cwd, process.cwd());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the end of a stdio child', () => {
  it('is reported once, with its exit status', async () => {
    const failing = open();
    await failing.tool('exit', { code: 1 });
    assert.equal((await failing.closed).message, 'exited with status 1');
    const done = open(['--exit=0']);
    const closed = await done.closed;
    assert.ok(closed instanceof ChannelClosed);
    assert.equal(closed.code, 'ECHANNEL_CLOSED');
    assert.equal(closed.message, 'exited with status 0');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(failing.closedCalls, 1);
    assert.equal(done.closedCalls, 1);
    assert.equal(done.channel.send('{"jsonrpc":"2.0","method":"ping","id":1}', []), closed, 'a send after the end is refused with it');
  });

  it('is reported with the signal that killed it', async () => {
    const child = open();
    const { pid } = (await child.tool('inspect')) as Inspected;
    process.kill(pid, 'SIGKILL');
    assert.equal((await child.closed).message, 'was killed by SIGKILL');
  });

  it('is reported after the opener returned when the command cannot be started', async () => {
    const child = new OpenedChild('fx', stdioConfig([], { command: 'gatehouse-no-such-command', args: [] }));
    assert.equal(child.closedCalls, 0, 'not from inside the opener');
    assert.equal(child.channel.send('{"jsonrpc":"2.0","method":"ping","id":1}', []), null, 'a message sent before the start failed is queued');
    assert.equal(child.closedCalls, 0, 'not from inside send');
    assert.equal((await child.closed).message, 'could not be started (spawn gatehouse-no-such-command ENOENT)');
    assert.equal(child.channel.pid, undefined);
    await child.channel.close();
  });

  it('is reported after the opener returned when Node refuses the command outright', async () => {
    const child = new OpenedChild('fx', stdioConfig([], { args: ['nul\u0000byte'] }));
    assert.equal(child.closedCalls, 0);
    assert.match((await child.closed).message, /^could not be started \(The argument 'args\[0\]' must be a string without null bytes/);
  });

  it('says when the working directory is what is missing', async () => {
    const child = new OpenedChild('fx', stdioConfig([], { cwd: '/nonexistent/gatehouse' }));
    assert.equal((await child.closed).message, `could not be started (spawn ${process.execPath} ENOENT: its working directory /nonexistent/gatehouse does not exist)`);
  });

  it('ends what is left of its group when it exits, even a process holding its stdout', async () => {
    const child = open(['--grandchild', '--grandchild-holds-stdout'], { stopGraceMs: 300 });
    const { grandchild } = (await child.tool('inspect')) as Inspected;
    const startedAt = Date.now();
    await child.tool('exit', { code: 3 });
    assert.equal((await child.closed).message, 'exited with status 3');
    assert.ok(Date.now() - startedAt < 2_000);
    await waitFor(() => !isAlive(grandchild!), 3_000);
  });
});

describe('close', () => {
  it('ends the child and its grandchild, and resolves once it exited (again for a second call)', async () => {
    const child = open(['--grandchild']);
    const { grandchild } = (await child.tool('inspect')) as Inspected;
    await child.channel.close();
    assert.match((await child.closed).message, /^was stopped by the gateway \(it (exited with status 0|was killed by SIGTERM)\)$/);
    await child.channel.close();
    assert.equal(child.closedCalls, 1);
    await waitFor(() => !isAlive(grandchild!), 3_000);
    assert.ok(child.channel.send('{"jsonrpc":"2.0","method":"ping","id":1}', []) instanceof ChannelClosed);
  });

  it('sends SIGKILL after the grace period to a child and grandchild that ignore SIGTERM', async () => {
    const graceMs = 500;
    const child = open(['--ignore-term', '--grandchild', '--grandchild-ignore-term'], { stopGraceMs: graceMs });
    const { pid, grandchild } = (await child.tool('inspect')) as Inspected;
    const startedAt = Date.now();
    const closing = child.channel.close();
    await new Promise((resolve) => setTimeout(resolve, graceMs / 2));
    assert.ok(isAlive(pid) && isAlive(grandchild!), 'both outlive SIGTERM');
    assert.ok(child.channel.send('{"jsonrpc":"2.0","method":"ping","id":1}', []) instanceof ChannelClosed, 'a closing child takes nothing more');
    await closing;
    const ms = Date.now() - startedAt;
    assert.equal((await child.closed).message, 'was stopped by the gateway (it was killed by SIGKILL)');
    assert.ok(ms >= graceMs - 20 && ms < graceMs + 2_000, `closed after ${ms} ms`);
    await waitFor(() => !isAlive(grandchild!), 3_000);
  });
});
