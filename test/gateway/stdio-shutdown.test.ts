/**
 * No stdio backend outlives the real `gatehouse vmcp serve`: clients make children (the fixture
 * server, each starting a grandchild in its group, and server-everything), then the gateway is
 * stopped with SIGTERM (it ends them as it stops) or killed with SIGKILL (its watchdog ends them
 * within a few seconds). The gateway runs under a subreaper (test/stdio/helpers/subreaper.ts), so
 * what it leaves is reaped as under an init that reaps: the subreaper's exit says that every
 * process the gateway started, and what they started, is gone; each pid is then checked (ESRCH).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { connectClient, textOf, type ConnectedClient } from '../fixtures/client.ts';
import { BIN } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { everythingBackend, fixtureBackend, inspectChild, processGone } from '../helpers/stdio-backends.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';
import { SubreaperRun, subreaperPython } from '../stdio/helpers/subreaper.ts';

const runs: SubreaperRun[] = [];
after(() => {
  for (const run of runs) run.process.kill('SIGKILL');
});

interface Served {
  readonly run: SubreaperRun;
  readonly url: string;
  /** The gateway process (the subreaper's child). */
  readonly pid: number;
}

/** `gatehouse vmcp serve` under a subreaper, once it listens; null when no subreaper can run here (skipped). */
async function serveUnderSubreaper(t: { skip(message?: string): void }): Promise<Served | null> {
  const found = subreaperPython('stdio backends and the gateway\'s end');
  if (skipIf(t, 'skip' in found ? (found as Skip) : null)) return null;
  const file = await writeConfig(
    vmcpYaml({
      backends: [
        { name: 'fx', transport: fixtureBackend(['--grandchild'], 'stdio: {stopGracePeriod: 2s}') },
        { name: 'everything', transport: everythingBackend() },
      ],
    }),
  );
  const run = new SubreaperRun((found as { python: string }).python, [process.execPath, BIN, 'vmcp', 'serve', '--config', file, '--port', '0']);
  runs.push(run);
  const listening = await run.json<{ url: string; pid: number }>((line) => line['msg'] === 'virtual MCP server listening', 30_000);
  return { run, url: listening.url, pid: listening.pid };
}

/** The pids whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Two sessions, each with a fixture child (and its grandchild) and a server-everything child: every pid the gateway made, and the clients. */
async function makeChildren(served: Served): Promise<{ clients: ConnectedClient[]; pids: Record<string, number> }> {
  const clients = [await connectClient(served.url), await connectClient(served.url)];
  const pids: Record<string, number> = {};
  for (const [i, c] of clients.entries()) {
    const facts = await inspectChild(c, 'fx');
    assert.equal(facts.ppid, served.pid);
    assert.ok(facts.grandchild !== null && !processGone(facts.grandchild));
    pids[`fixture child ${i}`] = facts.pid;
    pids[`its grandchild ${i}`] = facts.grandchild!;
    assert.match(textOf(await c.client.callTool({ name: 'everything_echo', arguments: { message: 'here' } })), /here/);
  }
  // Every other process of the gateway: server-everything's children and the watchdog.
  for (const pid of childrenOf(served.pid)) if (!Object.values(pids).includes(pid)) pids[`process ${pid} of the gateway`] = pid;
  assert.ok(Object.keys(pids).length >= 6, `two fixture children, two grandchildren, two server-everything children and the watchdog: ${JSON.stringify(pids)}`);
  return { clients, pids };
}

function assertAllGone(pids: Record<string, number>): void {
  for (const [what, pid] of Object.entries(pids)) assert.ok(processGone(pid), `the ${what} (${pid}) is still there`);
}

describe('gatehouse vmcp serve leaves no stdio backend behind', () => {
  it('SIGTERM: the gateway ends every child and grandchild as it stops, and exits by itself', async (t) => {
    const served = await serveUnderSubreaper(t);
    if (served === null) return;
    const { clients, pids } = await makeChildren(served);
    process.kill(served.pid, 'SIGTERM');
    const ms = await served.run.gone(15_000);
    t.diagnostic(`everything gone ${ms} ms after the SIGTERM`);
    assertAllGone({ gateway: served.pid, ...pids });
    assert.equal(served.run.reaped.find((r) => r.pid === served.pid)?.signal, 0, 'the gateway exited by itself');
    assert.ok(served.run.lines.some((line) => line.includes('"msg":"stopped"')), 'it logged its stop');
    await Promise.all(clients.map((c) => c.close({ terminate: false })));
  });

  it('SIGKILL: the watchdog ends every child and grandchild within a few seconds', async (t) => {
    const served = await serveUnderSubreaper(t);
    if (served === null) return;
    const { clients, pids } = await makeChildren(served);
    process.kill(served.pid, 'SIGKILL');
    const ms = await served.run.gone(10_000);
    t.diagnostic(`everything gone ${ms} ms after the SIGKILL`);
    assertAllGone({ gateway: served.pid, ...pids });
    assert.equal(served.run.reaped.find((r) => r.pid === served.pid)?.signal, 9);
    await Promise.all(clients.map((c) => c.close({ terminate: false })));
  });
});
