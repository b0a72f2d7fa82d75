/**
 * The newcomer's path: `npm start` (examples/quickstart/start.ts) starts the demo backends and
 * the gateway, and an MCP client sees one server with the tools of both. Run on free ports (the
 * same config, with the ports rewritten) so it never fights a gateway a developer is running.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient } from '../fixtures/client.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { exampleOnFreePorts, withExample } from '../helpers/example.ts';

/** The quickstart's config on free ports; `withAllowList` uncomments its plugin example. */
async function quickstartYaml(withAllowList = false): Promise<{ yaml: string; gateway: number }> {
  const { yaml: original, port } = await exampleOnFreePorts('examples/quickstart/vmcp.yaml', [4483, 9100, 9101]);
  let yaml = original;
  if (withAllowList) {
    const commented = /  # plugins:\n  #   - (.*)module: \.\.\/plugins\/tool-allowlist\.ts(.*)/;
    assert.match(yaml, commented, 'the quickstart shows the allow-list plugin');
    // The config is written elsewhere: the module path becomes absolute.
    yaml = yaml.replace(commented, `  plugins:\n    - $1module: "${REPO_ROOT}examples/plugins/tool-allowlist.ts"$2`);
  }
  return { yaml, gateway: port.get(4483)! };
}

/** `npm start` on the config; calls `use` with the gateway's MCP URL once it is ready, then stops it. */
async function withQuickstart(config: { yaml: string; gateway: number }, use: (url: string) => Promise<void>): Promise<void> {
  await withExample('examples/quickstart/start.ts', 'GATEHOUSE_QUICKSTART_CONFIG', config.yaml, 'Gatehouse is ready', async (stdout) => {
    const url = `http://127.0.0.1:${config.gateway}/mcp`;
    assert.match(stdout(), new RegExp(`point an MCP client at ${url}`));
    await use(url);
  });
}

describe('quickstart (npm start)', () => {
  it('serves one MCP endpoint with every demo backend\'s tools and the stdio server\'s, and stops cleanly on SIGTERM', async () => {
    await withQuickstart(await quickstartYaml(), async (url) => {
      const c = await connectClient(url);
      const tools = (await c.client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools.filter((t) => !t.startsWith('everything_')), ['demo_add', 'demo_current_time', 'demo_echo', 'docs_add', 'docs_current_time', 'docs_echo']);
      assert.ok(tools.includes('everything_echo'), 'the reference server from npm, run over stdio by the gateway');
      const answer = await c.client.callTool({ name: 'docs_echo', arguments: { text: 'hello' } });
      assert.deepEqual(answer.content, [{ type: 'text', text: 'docs says: hello' }]);
      const stdio = await c.client.callTool({ name: 'everything_echo', arguments: { message: 'over stdio' } });
      assert.match(JSON.stringify(stdio.content), /over stdio/);
      await c.close();
    });
  });

  it('with the example allow-list plugin the README shows: clients see and call only the allowed tools', async () => {
    await withQuickstart(await quickstartYaml(true), async (url) => {
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
