/**
 * The era matrix: every client generation with every backend generation, in both modes, for
 * what a user does — connect, list, call, progress, elicitation and sampling.
 *
 *   clients   SDK v1 (2025-11-25 sessions); SDK v2 in legacy mode, in auto mode (discovers,
 *             then speaks 2026-07-28) and pinned to 2026-07-28
 *   backends  SDK v2 in its three postures (2026-only; the SDK default, which serves 2025
 *             requests statelessly; a sessionful 2025 leg), an SDK v1 server, and
 *             @modelcontextprotocol/server-everything (2025, its tools depend on what the
 *             client declared)
 *   modes     transparent (a gateway per backend) and aggregated (one gateway, all five)
 *
 * Each cell runs every operation and reports every one that failed, so a red cell says which.
 * A 2026 backend in its default posture cannot ask a 2025 client for input on its own (it
 * serves it without a session); through the gateway, which speaks 2026 to it, it can.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as Sdk2Client, StreamableHTTPClientTransport as Sdk2Transport } from '@modelcontextprotocol/client';
import type { RunningVmcp } from '../../core/virtual-mcp-server.ts';
import { connectClient } from '../fixtures/client.ts';
import { startEverythingServer } from '../fixtures/everything-server.ts';
import { startSdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Posture } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

/** What a tool answered, as the test reads it. */
interface CallResult {
  readonly content?: unknown;
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
}

/** A connected client, whatever its SDK. */
interface MatrixClient {
  readonly era: 'legacy' | 'modern';
  toolNames(): Promise<string[]>;
  call(name: string, args: Record<string, unknown>, onProgress?: (progress: number) => void): Promise<CallResult>;
  close(): Promise<void>;
}

const ANSWER = { name: 'Ann' };
const MODEL_SAID = 'Paris';

type ClientKind = 'sdk1' | 'sdk2 legacy' | 'sdk2 auto' | 'sdk2 2026';
const CLIENTS: readonly ClientKind[] = ['sdk1', 'sdk2 legacy', 'sdk2 auto', 'sdk2 2026'];

async function connect(kind: ClientKind, url: string): Promise<MatrixClient> {
  if (kind === 'sdk1') {
    const c = await connectClient(url, {
      clientName: 'matrix-sdk1',
      onElicitation: () => ({ action: 'accept', content: ANSWER }),
      onSampling: () => ({ model: 'fixture-model', role: 'assistant', content: { type: 'text', text: MODEL_SAID } }),
    });
    return {
      era: 'legacy',
      toolNames: async () => (await c.client.listTools()).tools.map((t) => t.name),
      call: async (name, args, onProgress) =>
        (await c.client.callTool({ name, arguments: args }, undefined, onProgress === undefined ? {} : { onprogress: (p) => onProgress(p.progress) })) as CallResult,
      close: () => c.close(),
    };
  }
  const mode = kind === 'sdk2 legacy' ? 'legacy' : kind === 'sdk2 auto' ? 'auto' : { pin: '2026-07-28' };
  const client = new Sdk2Client({ name: `matrix-${kind.replace(' ', '-')}`, version: '1.0.0' }, { versionNegotiation: { mode: mode as never }, capabilities: { elicitation: { form: {} }, sampling: {} } });
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: ANSWER }));
  client.setRequestHandler('sampling/createMessage', async () => ({ model: 'fixture-model', role: 'assistant', content: { type: 'text', text: MODEL_SAID } }));
  await client.connect(new Sdk2Transport(new URL(url)));
  return {
    era: client.getProtocolEra() === 'modern' ? 'modern' : 'legacy',
    toolNames: async () => (await client.listTools()).tools.map((t) => t.name),
    call: async (name, args, onProgress) =>
      (await client.callTool({ name, arguments: args }, onProgress === undefined ? {} : { onprogress: (p) => onProgress(p.progress) })) as CallResult,
    close: () => client.close(),
  };
}

/** A backend of the matrix: how to start it and how its tools do each operation. */
interface BackendKind {
  readonly name: string;
  readonly era: 'legacy' | 'modern';
  start(name: string): Promise<{ url: string; close(): Promise<void> }>;
  readonly echo: (text: string) => [tool: string, args: Record<string, unknown>];
  readonly progress: [tool: string, args: Record<string, unknown>, steps: number];
  readonly elicit: [tool: string, args: Record<string, unknown>];
  readonly sample: [tool: string, args: Record<string, unknown>];
}

function sdk2(posture: Sdk2Posture): BackendKind {
  return {
    name: `v2${posture}`,
    era: 'modern',
    start: (name) => startSdk2Server({ name, posture }),
    echo: (text) => ['echo', { text }],
    progress: ['progress', { steps: 3 }, 3],
    elicit: ['elicit', { message: 'who are you?' }],
    sample: ['sample', { prompt: 'capital of France?' }],
  };
}

const BACKENDS: readonly BackendKind[] = [
  sdk2('modern'),
  sdk2('dual'),
  sdk2('sessionful'),
  {
    name: 'v1',
    era: 'legacy',
    start: (name) => startSdkServer({ name, tools: ['echo', 'slow', 'elicit', 'sample'] }),
    echo: (text) => ['echo', { text }],
    progress: ['slow', { steps: 3, delayMs: 5 }, 3],
    elicit: ['elicit', { message: 'who are you?' }],
    sample: ['sample', { prompt: 'capital of France?' }],
  },
  {
    name: 'everything',
    era: 'legacy',
    start: () => startEverythingServer(),
    echo: (text) => ['echo', { message: text }],
    progress: ['trigger-long-running-operation', { duration: 0.15, steps: 3 }, 3],
    elicit: ['trigger-elicitation-request', {}],
    sample: ['trigger-sampling-request', { prompt: 'capital of France?' }],
  },
];

/** Runs every operation of a cell; returns what failed (empty: the cell holds). */
async function runCell(kind: ClientKind, url: string, backend: BackendKind, prefix: string): Promise<string[]> {
  const failures: string[] = [];
  const step = async (what: string, run: () => Promise<void>): Promise<void> => {
    try {
      await run();
    } catch (err) {
      failures.push(`${what}: ${(err as Error).message.split('\n')[0]}`);
    }
  };
  let client: MatrixClient;
  try {
    client = await connect(kind, url);
  } catch (err) {
    return [`connect: ${(err as Error).message.split('\n')[0]}`];
  }
  try {
    if (kind === 'sdk2 auto' || kind === 'sdk2 2026') await step('era', async () => assert.equal(client.era, 'modern', 'a 2026-capable client speaks 2026 to the gateway'));
    const tools = (name: string): string => prefix + name;
    await step('tools/list', async () => {
      const names = await client.toolNames();
      for (const op of [backend.echo('x'), backend.progress, backend.elicit, backend.sample]) assert.ok(names.includes(tools(op[0])), `${tools(op[0])} is listed (got ${names.filter((n) => n.startsWith(prefix)).join(', ')})`);
    });
    await step('call', async () => {
      const [tool, args] = backend.echo(`hi ${kind}`);
      assert.match(JSON.stringify((await client.call(tools(tool), args)).content), new RegExp(`hi ${kind}`));
    });
    await step('progress', async () => {
      const seen: number[] = [];
      const [tool, args, steps] = backend.progress;
      const result = await client.call(tools(tool), args, (p) => void seen.push(p));
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.equal(seen.length, steps, `progress ${JSON.stringify(seen)}`);
      assert.equal(seen.at(-1), steps);
    });
    await step('elicitation', async () => {
      const [tool, args] = backend.elicit;
      const result = await client.call(tools(tool), args);
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.match(JSON.stringify(result), /Ann/);
    });
    await step('sampling', async () => {
      const [tool, args] = backend.sample;
      const result = await client.call(tools(tool), args);
      assert.notEqual(result.isError, true, JSON.stringify(result));
      assert.match(JSON.stringify(result), new RegExp(MODEL_SAID));
    });
  } finally {
    await client.close().catch(() => undefined);
  }
  return failures;
}

describe('eras, the matrix: transparent (a gateway in front of each backend)', () => {
  const running: { backend: BackendKind; url: string; gateway: RunningVmcp; close(): Promise<void> }[] = [];
  before(async () => {
    for (const backend of BACKENDS) {
      const server = await backend.start(backend.name);
      const gateway = await startTestGateway({ backends: [{ name: backend.name, url: server.url }] });
      running.push({ backend, url: gateway.url, gateway, close: () => server.close() });
    }
  });
  after(async () => {
    for (const r of running) {
      await r.gateway.stop();
      await r.close();
    }
  });

  for (const kind of CLIENTS) {
    for (const backend of BACKENDS) {
      it(`${kind} client × ${backend.name} backend`, async () => {
        const cell = running.find((r) => r.backend === backend)!;
        assert.deepEqual(await runCell(kind, cell.url, backend, ''), []);
      });
    }
  }
});

describe('eras, the matrix: aggregated (one gateway, all five backends)', () => {
  const servers: { close(): Promise<void> }[] = [];
  let gateway: RunningVmcp;
  before(async () => {
    const backends: { name: string; url: string }[] = [];
    for (const backend of BACKENDS) {
      const server = await backend.start(backend.name);
      servers.push(server);
      backends.push({ name: backend.name, url: server.url });
    }
    gateway = await startTestGateway({ backends });
  });
  after(async () => {
    await gateway.stop();
    for (const server of servers) await server.close();
  });

  for (const kind of CLIENTS) {
    it(`${kind} client × the group`, async () => {
      const failures: string[] = [];
      for (const backend of BACKENDS) for (const failure of await runCell(kind, gateway.url, backend, `${backend.name}_`)) failures.push(`${backend.name}: ${failure}`);
      assert.deepEqual(failures, []);
    });
  }
});
