/**
 * A stdio backend that writes hostile messages on its stdout, in front of the real gateway run as
 * a process of its own (`gatehouse vmcp serve`, so a crash is seen as its exit): nothing it
 * writes may end the gateway. The child is test/fixtures/hostile-stdio-server.mjs.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { serveCli, type ServedCli } from '../helpers/cli.ts';
import { openRawSession, post, vmcpYaml, writeConfig } from '../helpers/gateway.ts';

const HOSTILE = join(REPO_ROOT, 'test/fixtures/hostile-stdio-server.mjs');

describe('a stdio backend writing hostile messages, in front of the gateway as a process', () => {
  let served: ServedCli;
  // A gateway each: one that the first kills does not fail the second.
  beforeEach(async () => {
    const transport = `transport: stdio\ncommand: ${JSON.stringify(process.execPath)}\nargs: [${JSON.stringify(HOSTILE)}]`;
    served = await serveCli('vmcp', await writeConfig(vmcpYaml({ backends: [{ name: 'hostile', transport }] })), ['--log-format', 'json']);
  });
  afterEach(async () => {
    if (served.child.exitCode === null) await served.stop();
  });

  for (const tool of ['deep', 'token']) {
    it(`a tool whose backend writes ${tool === 'deep' ? 'a message nested 100,000 levels deep' : 'progress with an object token'}: the gateway lives on and answers`, async () => {
      const session = await openRawSession(served.url);
      const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: {}, _meta: { progressToken: 'p' } } };
      const called = await post(served.url, JSON.stringify(call), session).catch((err: Error) => ({ status: 0, text: err.message }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(served.child.exitCode, null, `the gateway exited: ${served.logs.filter((l) => (l.level as number) >= 50).map((l) => l.msg).join('; ')}`);
      assert.equal(called.status, 200);
      const ping = await post(served.url, '{"jsonrpc":"2.0","id":3,"method":"ping"}', session);
      assert.equal(ping.status, 200);
    });
  }
});
