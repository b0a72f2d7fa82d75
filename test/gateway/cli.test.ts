/**
 * The `gatehouse` command as a user runs it: validate, serve, and graceful shutdown on SIGTERM.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectClient } from '../fixtures/client.ts';
import { freePort } from '../fixtures/processes.ts';
import { runCli as run, serveCli } from '../helpers/cli.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';

describe('gatehouse vmcp validate', () => {
  it('exits 0 and says OK for a good file', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9100/mcp' }] }));
    const result = await run(['vmcp', 'validate', '--config', file]);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /OK \(VirtualMCPServer\/vmcp, group "tools" with 1 backend\)/);
  });

  it('prints every problem with its file position and YAML path, and exits 2', async () => {
    const yaml = `apiVersion: gatehouse.dev/v1
kind: MCPGroup
metadata: {name: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: echo}
spec: {transport: streamable-http, groupRef: tools, timeout: soon}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: other}
spec: {url: "http://127.0.0.1:9101/mcp", groupRef: toolz}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: {type: anonymous}
`;
    const file = await writeConfig(yaml);
    const result = await run(['vmcp', 'validate', '--config', file]);
    assert.equal(result.code, 2);
    const lines = result.stderr.trim().split('\n');
    const expect = [
      /:1:\d+ MCPGroup\/tools apiVersion: .*v1alpha1/,
      /:8:\d+ MCPServer\/echo spec.url: is required with transport: streamable-http: the MCP endpoint of the backend/,
      /:8:\d+ MCPServer\/echo spec.timeout: "soon" is not a duration/,
      /:13:\d+ MCPServer\/other spec.groupRef: MCPGroup "toolz" not found \(did you mean "tools"\?\)/,
    ];
    for (const pattern of expect) assert.ok(lines.some((l) => pattern.test(l)), `${pattern} in:\n${result.stderr}`);
    assert.ok(lines.every((l) => l.startsWith(file)), 'every line starts with the file');
  });

  it('exits 2 with usage for a wrong command line', async () => {
    const result = await run(['vmcp', 'validate']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /required option '-c, --config <FILE>' not specified/);
  });
});

describe('gatehouse vmcp serve', () => {
  let backend: SdkServer;
  before(async () => {
    backend = await startSdkServer({ name: 'alpha' });
  });
  after(async () => {
    await backend.close();
  });

  it('refuses a bad file the same way validate does, without starting', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'not a url' }] }));
    const result = await run(['vmcp', 'serve', '--config', file, '--port', '0']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /MCPServer\/echo spec.url: /);
    assert.doesNotMatch(result.stdout, /listening/);
  });

  it('says which address is in use', async () => {
    const port = await freePort();
    const blocker = await startSdkServer({ port });
    try {
      const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: backend.url }] }));
      const result = await run(['vmcp', 'serve', '--config', file, '--port', String(port)]);
      assert.equal(result.code, 1);
      assert.match(result.stderr, new RegExp(`cannot listen on 127.0.0.1:${port}: the address is already in use`));
    } finally {
      await blocker.close();
    }
  });

  it('on SIGTERM drains the in-flight call, ends the SSE stream cleanly, and exits 0', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'alpha', url: backend.url }] }));
    const served = await serveCli('vmcp', file);
    const c = await connectClient(served.url);
    const stream = await c.standaloneStream;
    assert.equal(stream, 200, 'the GET stream is open');
    const progress: number[] = [];
    const call = c.client.callTool({ name: 'slow', arguments: { steps: 5, delayMs: 120 } }, CallToolResultSchema, {
      onprogress: (p) => progress.push(p.progress),
    });
    await c.waitForNotification('notifications/progress');
    served.child.kill('SIGTERM');
    const result = await call;
    assert.equal((result.content as { text: string }[])[0]?.text, 'done', 'the in-flight call finished');
    assert.deepEqual(progress, [1, 2, 3, 4, 5]);
    assert.equal(await served.exited, 0);
    assert.ok(served.logs.some((l) => l.msg === 'shutting down: draining in-flight requests'));
    assert.ok(served.logs.some((l) => l.msg === 'stopped'));
    await c.close({ terminate: false });
    await assert.rejects(fetch(served.url), 'nothing listens any more');
  });
});
