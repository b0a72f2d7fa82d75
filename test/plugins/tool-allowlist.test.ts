/**
 * The example tool allow-list plugin (examples/plugins/tool-allowlist.ts), loaded the two ways a
 * user can: named in the config file, and given in code.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import toolAllowlist from '../../examples/plugins/tool-allowlist.ts';
import { connectClient } from '../fixtures/client.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { PluginConfigError } from '../../core/plugin-api/plugin-loader.ts';

const MODULE = `${REPO_ROOT}examples/plugins/tool-allowlist.ts`;

async function expectFiltering(url: string, backend: SdkServer): Promise<void> {
  const c = await connectClient(url);
  try {
    const names = (await c.client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['add', 'echo'], 'tools/list is filtered');
    const ok = await c.client.callTool({ name: 'echo', arguments: { text: 'allowed' } });
    assert.match(JSON.stringify(ok.content), /allowed/);
    const before = backend.received.length;
    await assert.rejects(
      c.client.callTool({ name: 'crash', arguments: {} }),
      (err: unknown) => err instanceof McpError && err.code === -32602 && /tool "crash" is not allowed/.test(err.message),
    );
    assert.equal(backend.received.length, before, 'the refused call never reached the backend');
  } finally {
    await c.close();
  }
}

describe('example plugin: tool allow-list', () => {
  let sse: SdkServer;
  let json: SdkServer;
  before(async () => {
    sse = await startSdkServer({ name: 'sse' });
    json = await startSdkServer({ name: 'json', jsonResponse: true });
  });
  after(async () => {
    await sse.close();
    await json.close();
  });

  it('loaded from the config file: hides other tools and refuses calls to them (SSE backend)', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'sse', url: sse.url }],
      spec: `  plugins:\n    - {name: tool-allowlist, module: "${MODULE}", config: {allow: [echo, add]}}`,
    });
    try {
      await expectFiltering(gateway.url, sse);
    } finally {
      await gateway.stop();
    }
  });

  it('given in code: the same behaviour in front of a JSON-response backend', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'json', url: json.url }],
      plugins: [{ definition: toolAllowlist, config: { allow: ['echo', 'add'] }, source: 'code' }],
    });
    try {
      await expectFiltering(gateway.url, json);
    } finally {
      await gateway.stop();
    }
  });

  it('refuses a bad plugin config at start, naming the YAML path of the field', async () => {
    await assert.rejects(
      startTestGateway({
        backends: [{ name: 'sse', url: sse.url }],
        spec: `  plugins:\n    - {name: tool-allowlist, module: "${MODULE}", config: {allow: []}}`,
      }),
      (err: unknown) => err instanceof PluginConfigError && /VirtualMCPServer\/vmcp spec\.plugins\[0\]\.config\.allow: /.test(err.message),
    );
  });
});
