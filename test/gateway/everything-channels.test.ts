/**
 * The reference MCP server (`@modelcontextprotocol/server-everything`) reached as users run it:
 * as a legacy HTTP+SSE server (its `sse` mode) and as a stdio command the gateway starts (its
 * default mode), each aggregated next to a streamable-HTTP backend, with the official SDK client:
 * tools, prompts, resources, sampling, elicitation, progress, logging and cancellation, as the
 * same checks run for HTTP backends (test/aggregate/aggregated.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { textOf, withClient } from '../fixtures/client.ts';
import { freePort, waitFor } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { REPO_ROOT } from '../tiers.ts';

const EVERYTHING = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const BOTH = { capabilities: { sampling: true, elicitation: true } };

interface Mode {
  readonly name: string;
  /** The MCPServer's transport fields, and what to stop afterwards. */
  start(): Promise<{ transport: string; stop(): Promise<void> }>;
}

async function everythingOverSse(): Promise<{ transport: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [EVERYTHING, 'sse'], { env: { PATH: process.env.PATH, PORT: String(port) }, stdio: ['ignore', 'ignore', 'ignore'] });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/sse`, { signal: AbortSignal.timeout(300) }).then((r) => (void r.body?.cancel(), true)).catch(() => false)) || null, 15_000);
  return {
    transport: `transport: sse\nurl: "http://127.0.0.1:${port}/sse"`,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

async function everythingOverStdio(): Promise<{ transport: string; stop(): Promise<void> }> {
  return { transport: `transport: stdio\ncommand: ${JSON.stringify(process.execPath)}\nargs: [${JSON.stringify(EVERYTHING)}, stdio]`, stop: async () => {} };
}

const MODES: Mode[] = [
  { name: 'legacy HTTP+SSE', start: everythingOverSse },
  { name: 'stdio', start: everythingOverStdio },
];

for (const mode of MODES) {
  describe(`server-everything over ${mode.name}, aggregated with a streamable-HTTP backend`, () => {
    let web: SdkServer;
    let everything: { transport: string; stop(): Promise<void> };
    let gateway: RunningVmcp;
    before(async () => {
      web = await startSdkServer({ name: 'web', tools: ['echo'] });
      everything = await mode.start();
      gateway = await startTestGateway({ backends: [{ name: 'everything', transport: everything.transport }, { name: 'web', url: web.url }] });
    });
    after(async () => {
      await gateway?.stop();
      await everything?.stop();
      await web?.close();
    });

    it('lists and calls tools of both, gets a prompt and reads a resource', async () => {
      await withClient(gateway.url, {}, async (c) => {
        const names = (await c.client.listTools()).tools.map((t) => t.name);
        assert.ok(names.includes('everything_echo') && names.includes('web_echo'), names.join(', '));
        assert.match(textOf(await c.client.callTool({ name: 'everything_echo', arguments: { message: 'through the gateway' } })), /through the gateway/);
        assert.match(textOf(await c.client.callTool({ name: 'web_echo', arguments: { text: 'x' } })), /x$/);
        const prompt = await c.client.getPrompt({ name: 'everything_simple-prompt', arguments: {} });
        assert.ok(prompt.messages.length > 0);
        const resources = await c.client.listResources();
        const uri = resources.resources.find((r) => r.uri.startsWith('demo://'))?.uri;
        assert.ok(uri !== undefined, JSON.stringify(resources.resources.slice(0, 3)));
        const read = await c.client.readResource({ uri });
        assert.equal(read.contents[0]?.uri, uri);
      });
    });

    it('round-trips sampling and elicitation, and streams progress', async () => {
      await withClient(gateway.url, BOTH, async (c) => {
        await waitFor(async () => (await c.client.listTools()).tools.some((t) => t.name === 'everything_trigger-sampling-request'), 5000);
        const sampled = await c.client.callTool({ name: 'everything_trigger-sampling-request', arguments: { prompt: 'hello' } });
        assert.match(textOf(sampled), /hello/);
        const elicited = await c.client.callTool({ name: 'everything_trigger-elicitation-request', arguments: {} });
        assert.match(JSON.stringify(elicited.content), /fixture-user/);
        const seen: number[] = [];
        await c.client.callTool({ name: 'everything_trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, CallToolResultSchema, { onprogress: (p) => seen.push(p.progress) });
        assert.deepEqual(seen, [1, 2, 3]);
      });
    });

    it('a cancelled call is cancelled, and the session goes on', async () => {
      await withClient(gateway.url, {}, async (c) => {
        const controller = new AbortController();
        const call = c.client.callTool({ name: 'everything_trigger-long-running-operation', arguments: { duration: 5, steps: 50 } }, CallToolResultSchema, { signal: controller.signal, onprogress: () => undefined });
        await c.waitForNotification('notifications/progress');
        controller.abort('stop');
        await assert.rejects(call);
        assert.match(textOf(await c.client.callTool({ name: 'everything_echo', arguments: { message: 'after' } })), /after/);
      });
    });

    it('sets the log level and hears the server\'s log messages', async () => {
      await withClient(gateway.url, {}, async (c) => {
        await c.client.setLoggingLevel('debug');
        await c.client.callTool({ name: 'everything_toggle-simulated-logging', arguments: {} });
        const message = await c.waitForNotification('notifications/message', undefined, 10_000);
        assert.ok(message.params !== undefined);
      });
    });
  });
}
