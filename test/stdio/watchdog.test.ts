/**
 * No stdio backend outlives the gateway (core/upstream/stdio/watchdog.ts). A "gateway" process
 * (test/fixtures/stdio-gateway.ts) opens a child that starts a grandchild; killed with SIGKILL,
 * it leaves neither alive (nor a zombie) within a few seconds; stopped with SIGTERM, its close
 * path ends them. The gateway runs under a subreaper (helpers/subreaper.ts), so what it leaves is
 * reaped as under an init that reaps. Also the watchdog's program on its own: it ends the groups
 * it holds when its stdin ends (SIGKILL after the grace period), leaves those it was told are
 * gone, ignores lines that are not a group, exits by itself; and a watchdog that cannot start.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, describe, it } from 'node:test';
import { Watchdog, WATCHDOG_GRACE_MS, WATCHDOG_SCRIPT } from '../../core/upstream/stdio/watchdog.ts';
import { REPO_ROOT, waitFor } from '../fixtures/processes.ts';
import { captureLog } from '../store/helpers/log.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { isAlive, OpenedChild, processState, stdioConfig } from './helpers/stdio-harness.ts';
import { SubreaperRun, subreaperPython } from './helpers/subreaper.ts';

interface Pids {
  readonly gateway: number;
  readonly child: number;
  readonly grandchild: number;
  readonly watchdog: number;
}

const started: SubreaperRun[] = [];
after(() => {
  for (const run of started) run.process.kill('SIGKILL');
});

function gateway(t: { skip(message?: string): void }, args: readonly string[]): SubreaperRun | null {
  const found = subreaperPython('the stdio watchdog tests');
  if (skipIf(t, 'skip' in found ? (found as Skip) : null)) return null;
  const run = new SubreaperRun((found as { python: string }).python, [process.execPath, '--import', 'tsx', `${REPO_ROOT}test/fixtures/stdio-gateway.ts`, ...args]);
  started.push(run);
  return run;
}

/** Each pid is gone: no process, no zombie (its /proc entry is gone too). */
function assertGone(pids: Record<string, number>): void {
  for (const [what, pid] of Object.entries(pids)) {
    assert.equal(isAlive(pid), false, `the ${what} (${pid}) still runs`);
    assert.equal(processState(pid), null, `the ${what} (${pid}) is still in /proc (a zombie?)`);
  }
}

describe('a gateway killed with SIGKILL leaves no stdio backend', () => {
  it('ends the child and its grandchild within a few seconds, and the watchdog exits', async (t) => {
    const run = gateway(t, ['--', '--grandchild']);
    if (run === null) return;
    const pids = await run.json<Pids>((v) => 'child' in v);
    assert.ok(isAlive(pids.child) && isAlive(pids.grandchild) && isAlive(pids.watchdog));
    process.kill(pids.gateway, 'SIGKILL');
    const ms = await run.gone(5_000);
    assertGone({ child: pids.child, grandchild: pids.grandchild, watchdog: pids.watchdog });
    // The child may exit by itself first (its stdin ended with the gateway); its grandchild,
    // which reads nothing of the gateway, is the watchdog's to end.
    assert.ok(run.reaped.some((r) => r.pid === pids.child), 'the child was reparented to the subreaper and reaped');
    t.diagnostic(`all gone ${ms} ms after the SIGKILL`);
  });

  it('SIGKILLs, after the grace period, a child and grandchild that ignore SIGTERM', async (t) => {
    const run = gateway(t, ['--', '--ignore-term', '--grandchild', '--grandchild-ignore-term']);
    if (run === null) return;
    const pids = await run.json<Pids>((v) => 'child' in v);
    process.kill(pids.gateway, 'SIGKILL');
    const ms = await run.gone(WATCHDOG_GRACE_MS + 5_000);
    assertGone({ child: pids.child, grandchild: pids.grandchild, watchdog: pids.watchdog });
    assert.equal(run.reaped.find((r) => r.pid === pids.child)?.signal, 9);
    assert.ok(ms >= WATCHDOG_GRACE_MS - 500, `gone after ${ms} ms, before the grace period`);
  });

  it('a watchdog that was killed is started again, holding the groups', async (t) => {
    const run = gateway(t, ['--kill-watchdog-first', '--', '--grandchild']);
    if (run === null) return;
    const pids = await run.json<Pids>((v) => 'child' in v);
    process.kill(pids.gateway, 'SIGKILL');
    await run.gone(5_000);
    assertGone({ child: pids.child, grandchild: pids.grandchild, watchdog: pids.watchdog });
  });
});

describe('a gateway stopped with SIGTERM closes its stdio backends', () => {
  it('ends the child and its grandchild, and the watchdog has nothing left to do', async (t) => {
    const run = gateway(t, ['--', '--grandchild']);
    if (run === null) return;
    const pids = await run.json<Pids>((v) => 'child' in v);
    process.kill(pids.gateway, 'SIGTERM');
    const { closed } = await run.json<{ closed: string }>((v) => 'closed' in v);
    assert.match(closed, /^was stopped by the gateway \(it (exited with status 0|was killed by SIGTERM)\)$/);
    await run.gone(5_000);
    assertGone({ child: pids.child, grandchild: pids.grandchild, watchdog: pids.watchdog });
    assert.equal(run.reaped.find((r) => r.pid === pids.gateway)?.signal, 0, 'the gateway exited by itself');
  });
});

/**
 * A process in a group of its own that sleeps (ignoring SIGTERM if told), and how it ended.
 * `ready` settles once its handler is in place: a loaded machine can take longer than the test's
 * pause to start node, and a SIGTERM before the handler would end the "stubborn" one.
 */
function sleeper(ignoreTerm: boolean): { pid: number; ready: Promise<void>; ended: Promise<NodeJS.Signals | null> } {
  const script = `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ''} process.stdout.write('ready\\n'); setInterval(() => {}, 1e6)`;
  const child = spawn(process.execPath, ['-e', script], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  const ready = once(child.stdout, 'data').then(() => undefined);
  child.stdout.resume();
  const ended = once(child, 'exit').then(([, signal]) => signal as NodeJS.Signals | null);
  return { pid: child.pid!, ready, ended };
}

function watchdogProcess(graceMs: number): { write(text: string): void; end(): void; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['-e', WATCHDOG_SCRIPT, String(graceMs)], { stdio: ['pipe', 'ignore', 'inherit'] });
  return {
    write: (text) => child.stdin.write(text),
    end: () => child.stdin.end(),
    exited: once(child, 'exit').then(([code]) => code as number | null),
  };
}

describe("the watchdog's program", () => {
  it('exits at once when its stdin ends and it holds no group', async () => {
    const watchdog = watchdogProcess(10_000);
    watchdog.write('+123456789\n-123456789\n+1\n+0\n+-1\n+abc\n-\n\n');
    const startedAt = Date.now();
    watchdog.end();
    assert.equal(await watchdog.exited, 0);
    assert.ok(Date.now() - startedAt < 2_000);
  });

  it('sends SIGTERM to the groups it holds, SIGKILL after the grace period to those left, and leaves the others', async () => {
    const polite = sleeper(false);
    const stubborn = sleeper(true);
    const released = sleeper(false);
    try {
      await Promise.all([polite.ready, stubborn.ready, released.ready]);
      const watchdog = watchdogProcess(300);
      watchdog.write(`+${polite.pid}\n+${stubborn.pid}\n+${released.pid}\n`);
      watchdog.write(`-${released.pid}\n`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      watchdog.end();
      assert.equal(await polite.ended, 'SIGTERM');
      assert.equal(await stubborn.ended, 'SIGKILL');
      assert.equal(await watchdog.exited, 0);
      assert.equal(isAlive(released.pid), true, 'a group it was told is gone is not signalled');
    } finally {
      for (const { pid } of [polite, stubborn, released]) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
  });
});

describe('a watchdog that cannot be started', () => {
  it('says so once, and the children still run', async () => {
    const { log, lines } = captureLog();
    const watchdog = new Watchdog({ log, execPath: '/nonexistent/node' });
    const first = new OpenedChild('fx', stdioConfig(), { watchdog });
    const second = new OpenedChild('fx', stdioConfig(), { watchdog });
    assert.equal((await first.tool('echo', { text: 'still runs' })), 'still runs');
    assert.equal((await second.tool('echo', { text: 'too' })), 'too');
    await waitFor(() => lines().some((l) => String(l['msg']).includes('watchdog')));
    await Promise.all([first.channel.close(), second.channel.close()]);
    const warnings = lines().filter((l) => String(l['msg']).includes('watchdog'));
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]!['msg']), /^the stdio watchdog process could not be started \(spawn \/nonexistent\/node ENOENT\): if the gateway is killed, its stdio backends are left running$/);
    assert.equal(watchdog.pid, undefined);
  });
});
