/**
 * Stdio backends across reloads of the real `gatehouse vmcp serve` (SIGHUP, the file changed):
 * a change of a stdio backend's arguments ends its old child once the old generation has drained
 * (the process is gone: ESRCH) and the session's next call starts a new one with the new
 * arguments; a reload that leaves the backend as it was keeps its child; removing the backend
 * ends its children. With the SDK client, next to a streamable-HTTP backend.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { connectClient, textOf } from '../fixtures/client.ts';
import { waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { serveCli, type ServedCli } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig, type TestBackend } from '../helpers/gateway.ts';
import { failureOf, fixtureBackend, inspectChild, processGone, STDIO_FIXTURE_SERVER, waitGone } from '../helpers/stdio-backends.ts';

type Line = Record<string, unknown>;

describe('gatehouse vmcp serve: SIGHUP reloads change, keep and remove a stdio backend', () => {
  let web: SdkServer;
  let other: SdkServer;
  before(async () => {
    web = await startSdkServer({ name: 'web', tools: ['echo'] });
    other = await startSdkServer({ name: 'other', tools: ['echo'] });
  });
  after(async () => {
    await Promise.all([web?.close(), other?.close()]);
  });

  /** Writes the file, sends SIGHUP and waits for the reload's outcome (the `reload applied` entry after those seen). */
  async function reload(served: ServedCli, file: string, backends: TestBackend[]): Promise<Line> {
    const seen = served.logs.length;
    await writeFile(file, vmcpYaml({ backends }));
    served.child.kill('SIGHUP');
    return waitFor(() => served.logs.slice(seen).find((l) => typeof l['msg'] === 'string' && (l['msg'] as string).startsWith('reload applied')), 15_000);
  }

  it('changed arguments: a new child, the old one ended once the old generation drained; unchanged: kept; removed: ended', async () => {
    const webBackend: TestBackend = { name: 'web', url: web.url };
    const fx = (generation: string): TestBackend => ({ name: 'fx', transport: fixtureBackend([`--generation=${generation}`]) });
    const file = await writeConfig(vmcpYaml({ backends: [fx('1'), webBackend] }));
    const served = await serveCli('vmcp', file);
    const c = await connectClient(served.url);
    try {
      const first = await inspectChild(c, 'fx');
      assert.equal(first.ppid, served.child.pid);

      const changed = await reload(served, file, [fx('2'), webBackend]);
      assert.deepEqual(changed['backendsChanged'], ['fx']);
      const second = await inspectChild(c, 'fx');
      assert.notEqual(second.pid, first.pid, 'a new child for the changed backend');
      assert.deepEqual(await argvOf(second.pid), [process.execPath, STDIO_FIXTURE_SERVER, '--generation=2']);
      await waitGone([first.pid], 15_000);

      // Another backend is added: this one is unchanged, and its child goes on serving the session.
      const kept = await reload(served, file, [fx('2'), webBackend, { name: 'other', url: other.url }]);
      assert.deepEqual(kept['backendsAdded'], ['other']);
      assert.deepEqual(kept['backendsChanged'], []);
      assert.equal((await inspectChild(c, 'fx')).pid, second.pid, 'the same child');
      assert.match(textOf(await c.client.callTool({ name: 'other_echo', arguments: { text: 'new' } })), /new$/);

      const removed = await reload(served, file, [webBackend, { name: 'other', url: other.url }]);
      assert.deepEqual(removed['backendsRemoved'], ['fx']);
      await waitGone([second.pid], 15_000);
      const refused = await failureOf(c.client.callTool({ name: 'fx_inspect', arguments: {} }));
      assert.match(refused.message, /Unknown tool: fx_inspect \(backend "fx" was removed from the configuration\)/);
      assert.match(textOf(await c.client.callTool({ name: 'web_echo', arguments: { text: 'still' } })), /still$/);
      await c.close();
      assert.equal(await served.stop(), 0);
      assert.ok(processGone(second.pid));
    } finally {
      await c.close();
      served.child.kill('SIGKILL');
    }
  });
});

/** A process's argv, from /proc. */
async function argvOf(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((arg) => arg !== '');
}
