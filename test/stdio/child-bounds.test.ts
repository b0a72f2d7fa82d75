/**
 * The bounds of a stdio child (core/upstream/stdio/child.ts) against the fixture server: a line
 * longer than `maxLineBytes` ends it without the gateway holding more; so do more than 64 lines
 * that are not JSON-RPC within 10 s, while a few are logged and skipped; its stderr is logged
 * with the backend's name, cut and rate-bounded; a child that does not read its stdin gets sends
 * refused past the bound; and writing to a child that is gone throws nothing.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { UpstreamError } from '../../core/upstream/upstream-error.ts';
import { STDIN_BOUND_BYTES } from '../../core/upstream/stdio/child.ts';
import { STDERR_LINE_BYTES, STDERR_LINES_PER_WINDOW } from '../../core/upstream/stdio/stderr-lines.ts';
import { waitFor } from '../fixtures/processes.ts';
import { captureLog } from '../store/helpers/log.ts';
import { OpenedChild, stdioConfig, type OpenOptions } from './helpers/stdio-harness.ts';

const opened: OpenedChild[] = [];
after(async () => {
  await Promise.all(opened.map((o) => o.channel.close()));
});

function open(flags: readonly string[], options: OpenOptions = {}, stopGraceMs = 1_000): OpenedChild {
  const child = new OpenedChild('fx', stdioConfig(flags, { stopGraceMs }), options);
  opened.push(child);
  return child;
}

describe('the bounds of a stdio child', () => {
  it('ends a child that writes a line longer than maxLineBytes, holding no more than that of it', async (t) => {
    const maxLineBytes = 4 * 1024 * 1024;
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 5);
    try {
      const child = open(['--long-line'], { maxLineBytes });
      assert.equal((await child.closed).message, 'was ended: it wrote a line longer than 4 MiB to stdout');
    } finally {
      clearInterval(sampler);
    }
    const grew = peak - before;
    assert.ok(grew < 3 * maxLineBytes, `buffers grew by ${(grew / 1024 / 1024).toFixed(1)} MiB`);
    t.diagnostic(`buffers grew by ${(grew / 1024 / 1024).toFixed(1)} MiB at most`);
  });

  it('ends a child that writes more than 64 lines that are not JSON-RPC within 10 s, and logs them with its name', async () => {
    const { log, lines } = captureLog();
    const child = open(['--non-json=100'], { log });
    assert.equal((await child.closed).message, 'was ended: it wrote more than 64 lines that are not JSON-RPC to stdout within 10 s');
    const skipped = lines().filter((l) => l['problem'] === 'not JSON');
    assert.equal(skipped.length, 65);
    assert.equal(skipped[0]!['backend'], 'fx');
    assert.equal(skipped[0]!['line'], 'this is not JSON-RPC, line 0');
    assert.ok(lines().some((l) => l['level'] === 40 && l['msg'] === 'backend "fx" was ended: it wrote more than 64 lines that are not JSON-RPC to stdout within 10 s'));
  });

  it('skips a few lines that are not JSON-RPC and keeps serving', async () => {
    const { log, lines } = captureLog();
    const child = open(['--non-json=3'], { log });
    assert.equal(await child.tool('echo', { text: 'still here' }), 'still here');
    assert.equal(lines().filter((l) => l['problem'] === 'not JSON').length, 3);
  });

  it('logs its stderr line by line with its name and pid, cut, at most 100 lines per 10 s', async () => {
    const { log, lines } = captureLog();
    const child = open(['--stderr-lines=150', '--stderr-bytes=5000'], { log });
    const pid = child.channel.pid;
    await child.tool('exit', { code: 0 });
    await child.closed;
    const stderr = lines().filter((l) => l['stream'] === 'stderr');
    const logged = stderr.filter((l) => l['dropped'] === undefined);
    assert.equal(logged.length, STDERR_LINES_PER_WINDOW);
    for (const entry of logged) {
      assert.equal(entry['backend'], 'fx');
      assert.equal(entry['backendPid'], pid);
      assert.equal(entry['cut'], true);
      assert.equal(String(entry['msg']).length, STDERR_LINE_BYTES);
    }
    assert.match(String(logged[0]!['msg']), /^000000 e+$/);
    assert.deepEqual(stderr.filter((l) => l['dropped'] !== undefined).map((l) => l['dropped']), [50]);
  });

  it('logs an unfinished last line of stderr when the child exits', async () => {
    const { log, lines } = captureLog();
    const child = open(['--stderr-lines=1', '--stderr-partial=fatal: no newline', '--exit=2'], { log });
    assert.equal((await child.closed).message, 'exited with status 2');
    assert.deepEqual(lines().filter((l) => l['stream'] === 'stderr').map((l) => l['msg']), ['000000 eeeeeeeeeeeee', 'fatal: no newline']);
  });

  it(`refuses a send once ${STDIN_BOUND_BYTES / 1024 / 1024} MiB wait unread in the stdin of a child that does not read it`, async (t) => {
    const child = open(['--no-read'], { maxLineBytes: 64 * 1024 });
    const message = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { data: 'z'.repeat(100 * 1024) } });
    let refused: UpstreamError | null = null;
    let sent = 0;
    while (refused === null && sent < 100) {
      refused = child.channel.send(message, []);
      if (refused === null) sent++;
    }
    assert.ok(refused !== null, 'never refused');
    assert.equal(refused.code, 'ECHANNEL_STALLED');
    assert.match(refused.message, /^does not read its input \(\d+ bytes waiting\)$/);
    const waiting = Number(/\((\d+) bytes/.exec(refused.message)![1]);
    assert.ok(waiting > STDIN_BOUND_BYTES && waiting <= STDIN_BOUND_BYTES + message.length + 1, `${waiting} bytes waiting`);
    assert.ok(sent * (message.length + 1) <= STDIN_BOUND_BYTES + 2 * 1024 * 1024, `${sent} sends taken`);
    t.diagnostic(`${sent} sends of ${message.length + 1} bytes taken, then refused with ${waiting} bytes waiting`);
    await child.channel.close();
  });

  it('throws nothing when what it is sent meets a closed pipe', async () => {
    const child = open([]);
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      await child.tool('exit', { code: 0 });
      const ping = '{"jsonrpc":"2.0","method":"ping","id":1}';
      // Until the end is reported, sends go to a pipe whose reader is gone (EPIPE).
      await waitFor(() => {
        child.channel.send(ping, []);
        return child.closedCalls === 1;
      }, 5_000, 1);
      assert.equal((await child.closed).message, 'exited with status 0');
      assert.deepEqual(uncaught, []);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
