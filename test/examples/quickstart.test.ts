/**
 * The newcomer's path: `npm start` (examples/quickstart/start.ts) starts the demo backends and
 * the gateway, and an MCP client sees one server with the tools of both. Run on free ports (the
 * same config, with the ports rewritten) so it never fights a gateway a developer is running.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient } from '../fixtures/client.ts';
import { REPO_ROOT, freePort, waitFor } from '../fixtures/processes.ts';
import { writeConfig } from '../helpers/gateway.ts';

/** The quickstart's config on free ports; `withAllowList` uncomments its plugin example. */
async function quickstartYaml(ports: { gateway: number; demo: number; docs: number }, withAllowList = false): Promise<string> {
  let yaml = (await readFile(`${REPO_ROOT}examples/quickstart/vmcp.yaml`, 'utf8'))
    .replaceAll('127.0.0.1:4483', `127.0.0.1:${ports.gateway}`)
    .replaceAll('127.0.0.1:9100', `127.0.0.1:${ports.demo}`)
    .replaceAll('127.0.0.1:9101', `127.0.0.1:${ports.docs}`);
  // Every address is rewritten, comments included: no port of a quickstart that may be running here is used.
  assert.doesNotMatch(yaml, /127\.0\.0\.1:(4483|9100|9101)\b/);
  if (withAllowList) {
    const commented = /  # plugins:\n  #   - (.*)module: \.\.\/plugins\/tool-allowlist\.ts(.*)/;
    assert.match(yaml, commented, 'the quickstart shows the allow-list plugin');
    // The config is written elsewhere: the module path becomes absolute.
    yaml = yaml.replace(commented, `  plugins:\n    - $1module: "${REPO_ROOT}examples/plugins/tool-allowlist.ts"$2`);
  }
  return yaml;
}

/** `npm start` on the config; calls `use` with the gateway's MCP URL once it is ready, then stops it. */
async function withQuickstart(yaml: string, gatewayPort: number, use: (url: string) => Promise<void>): Promise<void> {
  const config = await writeConfig(yaml);
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/quickstart/start.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, GATEHOUSE_QUICKSTART_CONFIG: config, LOG_LEVEL: 'warn' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, 'close');
  try {
    await waitFor(() => stdout.includes('Gatehouse is ready'), 20_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${stderr}`);
    });
    assert.match(stdout, new RegExp(`point an MCP client at http://127.0.0.1:${gatewayPort}/mcp`));
    await use(`http://127.0.0.1:${gatewayPort}/mcp`);
  } finally {
    child.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
  }
}

async function freePorts(): Promise<{ gateway: number; demo: number; docs: number }> {
  return { gateway: await freePort(), demo: await freePort(), docs: await freePort() };
}

describe('quickstart (npm start)', () => {
  it('serves one MCP endpoint with every demo backend\'s tools, and stops cleanly on SIGTERM', async () => {
    const ports = await freePorts();
    await withQuickstart(await quickstartYaml(ports), ports.gateway, async (url) => {
      const c = await connectClient(url);
      const tools = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools, ['demo_add', 'demo_current_time', 'demo_echo', 'docs_add', 'docs_current_time', 'docs_echo']);
      const answer = await c.client.callTool({ name: 'docs_echo', arguments: { text: 'hello' } });
      assert.deepEqual(answer.content, [{ type: 'text', text: 'docs says: hello' }]);
      await c.close();
    });
  });

  it('with the example allow-list plugin the README shows: clients see and call only the allowed tools', async () => {
    const ports = await freePorts();
    await withQuickstart(await quickstartYaml(ports, true), ports.gateway, async (url) => {
      const c = await connectClient(url);
      const tools = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools, ['demo_echo', 'docs_add']);
      const answer = await c.client.callTool({ name: 'demo_echo', arguments: { text: 'allowed' } });
      assert.deepEqual(answer.content, [{ type: 'text', text: 'demo says: allowed' }]);
      await assert.rejects(
        c.client.callTool({ name: 'demo_add', arguments: { a: 1, b: 2 } }),
        (err: unknown) => err instanceof McpError && err.code === -32602 && /tool "demo_add" is not allowed/.test(err.message),
      );
      await c.close();
    });
  });
});
