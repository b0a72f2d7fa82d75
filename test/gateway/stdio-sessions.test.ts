/**
 * Stdio backends' processes and the sessions they serve, end to end: the real gateway starts
 * real child processes (the fixture server, test/fixtures/stdio-server.mjs), aggregated next to a
 * streamable-HTTP backend, and the official SDK client asks each child who it is (`inspect`: its
 * pid). One child per client session, one for all with `shared: true`; `maxProcesses` refuses a
 * session when every child is busy, naming the limit, and an idle child gives way; a child no
 * request used for `idleTimeout` is really gone (ESRCH), and the session's next call starts
 * another.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient, textOf, type ConnectedClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { failureOf, fixtureBackend, inspectChild, processGone, waitGone } from '../helpers/stdio-backends.ts';

/** How long a busy call runs at the child: long enough to be refused a third child meanwhile. */
const BUSY_MS = 4_000;

describe('stdio children per session, aggregated with a streamable-HTTP backend', () => {
  let web: SdkServer;
  let gateway: RunningVmcp;
  /** The clients of the test running: each test ends its sessions (and so their children). */
  let clients: ConnectedClient[] = [];
  const connect = async (): Promise<ConnectedClient> => {
    const c = await connectClient(gateway.url);
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    await Promise.all(clients.map((c) => c.close()));
    clients = [];
  });

  before(async () => {
    web = await startSdkServer({ name: 'web', tools: ['echo'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'own', transport: fixtureBackend() },
        { name: 'pool', transport: fixtureBackend([], 'stdio: {shared: true}') },
        { name: 'few', transport: fixtureBackend([], 'stdio: {maxProcesses: 2}') },
        { name: 'idle', transport: fixtureBackend([], 'stdio: {idleTimeout: 1s}') },
        { name: 'web', url: web.url },
      ],
    });
  });
  after(async () => {
    await gateway?.stop();
    await web?.close();
  });

  it('two clients get two children of the gateway; a shared backend gives both the same one', async () => {
    const [a, b] = [await connect(), await connect()];
    const [ownA, ownB] = [await inspectChild(a, 'own'), await inspectChild(b, 'own')];
    assert.notEqual(ownA.pid, ownB.pid, 'a child per session');
    for (const facts of [ownA, ownB]) {
      assert.equal(facts.ppid, process.pid, 'started by the gateway');
      assert.equal(processGone(facts.pid), false);
    }
    assert.equal((await inspectChild(a, 'own')).pid, ownA.pid, "the session's next call goes to its own child");
    const [poolA, poolB] = [await inspectChild(a, 'pool'), await inspectChild(b, 'pool')];
    assert.equal(poolA.pid, poolB.pid, 'one child for every session');
    assert.notEqual(poolA.pid, ownA.pid);
    assert.match(textOf(await a.client.callTool({ name: 'web_echo', arguments: { text: 'x' } })), /x$/);

    // A session that ends takes its own child with it, not the shared one.
    await a.close();
    await waitGone([ownA.pid]);
    assert.equal(processGone(ownB.pid), false);
    assert.equal(processGone(poolA.pid), false);
    assert.equal((await inspectChild(b, 'pool')).pid, poolA.pid);
  });

  it('maxProcesses: a third session while both children are busy is refused naming the limit; an idle child then gives way', async () => {
    const [a, b] = [await connect(), await connect()];
    const pids = [(await inspectChild(a, 'few')).pid, (await inspectChild(b, 'few')).pid];
    // Both children busy: a call each, under way at the child (its progress says so).
    const calls = [a, b].map((c) => {
      let started!: () => void;
      const underWay = new Promise<void>((resolve) => (started = resolve));
      const done = c.client.callTool({ name: 'few_sleep', arguments: { ms: BUSY_MS } }, CallToolResultSchema, { onprogress: () => started(), timeout: 60_000 });
      return { underWay, done };
    });
    await Promise.all(calls.map((call) => call.underWay));

    const third = await connect();
    const refused = await failureOf(third.client.callTool({ name: 'few_echo', arguments: { text: 'x' } }));
    assert.equal(refused.code, -32603);
    assert.match(refused.message, /^MCP error -32603: tool few_echo cannot be called now: backend "few" has all 2 processes \(spec\.stdio\.maxProcesses\) busy; try again later$/);
    assert.match(textOf(await third.client.callTool({ name: 'web_echo', arguments: { text: 'still served' } })), /still served$/);
    assert.equal(textOf(await third.client.callTool({ name: 'own_echo', arguments: { text: 'other stdio' } })), 'other stdio');

    // The busy calls end well; then the longest-idle child gives way to the third session.
    for (const result of await Promise.all(calls.map((call) => call.done))) assert.equal(textOf(result), `slept ${BUSY_MS} ms`);
    const thirdPid = (await inspectChild(third, 'few')).pid;
    assert.ok(!pids.includes(thirdPid));
    await oneOfThemGone(pids);
    // The session whose child gave way gets a new one on its next call (and another idle one gives way).
    const left = processGone(pids[0]!) ? a : b;
    const again = (await inspectChild(left, 'few')).pid;
    assert.ok(![...pids, thirdPid].includes(again));
  });

  it('idleTimeout: a child no request used for 1 s is gone, and the next call starts a new one', async () => {
    const c = await connect();
    const first = await inspectChild(c, 'idle');
    const since = Date.now();
    await waitGone([first.pid], 10_000);
    const ms = Date.now() - since;
    assert.ok(ms >= 900, `ended after ${ms} ms, before its idleTimeout`);
    const next = await inspectChild(c, 'idle');
    assert.notEqual(next.pid, first.pid);
    assert.equal(processGone(next.pid), false);
    // A child in use is not idle: calls within the timeout keep it.
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal((await inspectChild(c, 'idle')).pid, next.pid);
    }
  });
});

/** Exactly one of the two pids ends (the longest-idle child), the other goes on. */
async function oneOfThemGone(pids: number[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!pids.some(processGone)) {
    if (Date.now() > deadline) throw new Error(`neither ${pids.join(' nor ')} ended`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.equal(pids.filter(processGone).length, 1, 'one idle child gave way, not both');
}
