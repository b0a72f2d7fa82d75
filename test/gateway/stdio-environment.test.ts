/**
 * What a stdio backend's child gets, through the real `gatehouse vmcp serve` (a process of its
 * own, with an environment the test sets): exactly its configured `env` (values and a Secret's
 * key) plus PATH and HOME, so a variable of the gateway's own environment never reaches it;
 * a configured PATH over the gateway's; its `cwd` resolved against the config file's directory,
 * not the gateway's working directory. The child says so itself (the fixture's `inspect` tool,
 * called with the SDK client).
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { withClient } from '../fixtures/client.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { serveCli } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { fixtureBackend, inspectChild, waitGone } from '../helpers/stdio-backends.ts';

const GATEWAY_SECRET = 'GATEHOUSE_TEST_GATEWAY_SECRET';
const SECRET_VALUE = 'from-the-secret s3cr3t';

const CREDS = `apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {token: "${SECRET_VALUE}"}`;

describe('a stdio child gets its configured environment and working directory, nothing of the gateway\'s', () => {
  it('env values and a secretKeyRef reach it, a variable of the gateway does not; cwd is relative to the config file', async () => {
    const file = await writeConfig(
      vmcpYaml({
        backends: [
          {
            name: 'envy',
            transport: fixtureBackend([], 'env:', '  - {name: GREETING, value: "hello there"}', '  - name: TOKEN', '    valueFrom: {secretKeyRef: {name: creds, key: token}}', 'cwd: work/dir'),
          },
          { name: 'pathy', transport: fixtureBackend([], 'env: [{name: PATH, value: /nonexistent/gatehouse-bin}]') },
        ],
        documents: CREDS,
      }),
    );
    const workDir = join(dirname(file), 'work/dir');
    await mkdir(workDir, { recursive: true });
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'] ?? '/root', [GATEWAY_SECRET]: 'must-not-leak', NODE_ENV: 'production' };
    // The gateway runs in the checkout, not beside its config: cwd follows the file, not the process.
    const served = await serveCli('vmcp', file, [], [], { cwd: REPO_ROOT, env });
    const pids: number[] = [];
    try {
      const own = await readFile(`/proc/${served.child.pid}/environ`, 'utf8');
      assert.ok(own.split('\0').includes(`${GATEWAY_SECRET}=must-not-leak`), "the gateway's own environment has the variable");
      await withClient(served.url, {}, async (c) => {
        const envy = await inspectChild(c, 'envy');
        pids.push(envy.pid);
        assert.equal(envy.ppid, served.child.pid, 'a child of the gateway process');
        assert.deepEqual(envy.env, { GREETING: 'hello there', TOKEN: SECRET_VALUE, PATH: env.PATH, HOME: env.HOME });
        assert.equal(envy.cwd, await realpath(workDir));

        const pathy = await inspectChild(c, 'pathy');
        pids.push(pathy.pid);
        assert.deepEqual(pathy.env, { PATH: '/nonexistent/gatehouse-bin', HOME: env.HOME }, 'a configured PATH is used, not the gateway\'s');
        assert.equal(pathy.cwd, REPO_ROOT.replace(/\/$/, ''), "no cwd: the gateway's own");
      });
      assert.ok(!JSON.stringify(served.logs).includes('s3cr3t'), 'the secret value is not logged');
      assert.equal(await served.stop(), 0);
      await waitGone(pids);
    } finally {
      served.child.kill('SIGKILL');
    }
  });
});
