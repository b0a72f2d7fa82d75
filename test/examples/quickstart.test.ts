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
import { connectClient } from '../fixtures/client.ts';
import { REPO_ROOT, freePort, waitFor } from '../fixtures/processes.ts';
import { writeConfig } from '../helpers/gateway.ts';

describe('quickstart (npm start)', () => {
  it('serves one MCP endpoint with every demo backend\'s tools, and stops cleanly on SIGTERM', async () => {
    const [gateway, demo, docs] = [await freePort(), await freePort(), await freePort()];
    const yaml = (await readFile(`${REPO_ROOT}examples/quickstart/vmcp.yaml`, 'utf8'))
      .replaceAll('127.0.0.1:4483', `127.0.0.1:${gateway}`)
      .replaceAll('127.0.0.1:9100', `127.0.0.1:${demo}`)
      .replaceAll('127.0.0.1:9101', `127.0.0.1:${docs}`);
    // Every address is rewritten, comments included: no port of a quickstart that may be running here is used.
    assert.doesNotMatch(yaml, /127\.0\.0\.1:(4483|9100|9101)\b/);
    const config = await writeConfig(yaml);
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/quickstart/start.ts'], {
      cwd: REPO_ROOT,
      env: { ...process.env, GATEHOUSE_QUICKSTART_CONFIG: config, LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const exited = once(child, 'close');
    try {
      await waitFor(() => stdout.includes('Gatehouse is ready'), 20_000);
      assert.match(stdout, new RegExp(`point an MCP client at http://127.0.0.1:${gateway}/mcp`));
      const c = await connectClient(`http://127.0.0.1:${gateway}/mcp`);
      const tools = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools, ['demo_add', 'demo_current_time', 'demo_echo', 'docs_add', 'docs_current_time', 'docs_echo']);
      const answer = await c.client.callTool({ name: 'docs_echo', arguments: { text: 'hello' } });
      assert.deepEqual(answer.content, [{ type: 'text', text: 'docs says: hello' }]);
      await c.close();
    } finally {
      child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0);
    }
  });
});
