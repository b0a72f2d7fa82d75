/**
 * The era matrix: every client generation with every backend generation, in both modes, for
 * what a user does — connect, list, call, progress, elicitation and sampling.
 *
 *   clients   SDK v1 (2025-11-25 sessions); SDK v2 in legacy mode, in auto mode (discovers,
 *             then speaks 2026-07-28) and pinned to 2026-07-28; the Python `mcp` client in the
 *             same three modes (test/helpers/python-client.ts; skipped without it)
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
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient } from '../fixtures/client.ts';
import { startEverythingServer } from '../fixtures/everything-server.ts';
import { startSdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Posture } from '../fixtures/sdk2-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { pythonClient, runPythonClient, type PythonMode, type PythonStep } from '../helpers/python-client.ts';
import { skipIf } from '../store/helpers/service.ts';

/** What a tool answered, as the test reads it. */
interface CallResult {
  readonly content?: unknown;
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
}

/** One operation of a cell, whatever the client: what to do, and what its answer must be. */
type Operation =
  | { readonly what: string; readonly op: 'era'; check(era: string): void }
  | { readonly what: string; readonly op: 'tools'; check(names: string[]): void }
  | { readonly what: string; readonly op: 'call'; readonly tool: string; readonly args: Record<string, unknown>; check(result: CallResult, progress: number[]): void };

const ANSWER = { name: 'Ann' };
const MODEL_SAID = 'Paris';

type ClientKind = 'sdk1' | 'sdk2 legacy' | 'sdk2 auto' | 'sdk2 2026' | 'python legacy' | 'python auto' | 'python 2026';
const CLIENTS: readonly ClientKind[] = ['sdk1', 'sdk2 legacy', 'sdk2 auto', 'sdk2 2026', 'python legacy', 'python auto', 'python 2026'];

/** A TypeScript client, connected: runs one operation at a time. */
interface TsClient {
  readonly era: 'legacy' | 'modern';
  toolNames(): Promise<string[]>;
  call(name: string, args: Record<string, unknown>, onProgress: (progress: number) => void): Promise<CallResult>;
  close(): Promise<void>;
}

async function connectTs(kind: ClientKind, url: string): Promise<TsClient> {
  if (kind === 'sdk1') {
    const c = await connectClient(url, {
      clientName: 'matrix-sdk1',
      onElicitation: () => ({ action: 'accept', content: ANSWER }),
      onSampling: () => ({ model: 'fixture-model', role: 'assistant', content: { type: 'text', text: MODEL_SAID } }),
    });
    return {
      era: 'legacy',
      toolNames: async () => (await c.client.listTools()).tools.map((t) => t.name),
      call: async (name, args, onProgress) => (await c.client.callTool({ name, arguments: args }, undefined, { onprogress: (p) => onProgress(p.progress) })) as CallResult,
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
    call: async (name, args, onProgress) => (await client.callTool({ name, arguments: args }, { onprogress: (p) => onProgress(p.progress) })) as CallResult,
    close: () => client.close(),
  };
}

/** Runs `operations` with a TypeScript client; returns what failed. */
async function runTs(kind: ClientKind, url: string, operations: readonly Operation[]): Promise<string[]> {
  let client: TsClient;
  try {
    client = await connectTs(kind, url);
  } catch (err) {
    return [`connect: ${(err as Error).message.split('\n')[0]}`];
  }
  const failures: string[] = [];
  try {
    for (const operation of operations) {
      try {
        if (operation.op === 'era') operation.check(client.era);
        else if (operation.op === 'tools') operation.check(await client.toolNames());
        else {
          const progress: number[] = [];
          operation.check(await client.call(operation.tool, operation.args, (p) => void progress.push(p)), progress);
        }
      } catch (err) {
        failures.push(`${operation.what}: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  } finally {
    await client.close().catch(() => undefined);
  }
  return failures;
}

/** Runs `operations` with the Python client in `mode`, as one plan; returns what failed. */
async function runPython(python: string, mode: PythonMode, url: string, operations: readonly Operation[]): Promise<string[]> {
  const plan: PythonStep[] = operations.map((o) => (o.op === 'call' ? { op: 'call', tool: o.tool, args: o.args } : { op: o.op }));
  const outcomes = await runPythonClient(python, url, mode, plan);
  if (outcomes.length === 1 && !outcomes[0]!.ok && outcomes[0]!.error.startsWith('connect:')) return [outcomes[0]!.error];
  const failures: string[] = [];
  operations.forEach((operation, i) => {
    const outcome = outcomes[i];
    try {
      if (outcome === undefined) throw new Error('no answer (the client stopped)');
      if (!outcome.ok) throw new Error(outcome.error);
      if (operation.op === 'era') operation.check(outcome.value as string);
      else if (operation.op === 'tools') operation.check(outcome.value as string[]);
      else operation.check(outcome.value as CallResult, outcome.progress ?? []);
    } catch (err) {
      failures.push(`${operation.what}: ${(err as Error).message.split('\n')[0]}`);
    }
  });
  return failures;
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

/** What a cell does with `backend` (its tools under `prefix`), and what each answer must be. */
function operationsFor(kind: ClientKind, backend: BackendKind, prefix: string): Operation[] {
  const tool = (name: string): string => prefix + name;
  const [echoTool, echoArgs] = backend.echo(`hi ${kind}`);
  const [progressTool, progressArgs, steps] = backend.progress;
  const succeeded = (result: CallResult): void => assert.notEqual(result.isError, true, JSON.stringify(result).slice(0, 300));
  const operations: Operation[] = [
    {
      what: 'tools/list',
      op: 'tools',
      check: (names) => {
        for (const name of [echoTool, progressTool, backend.elicit[0], backend.sample[0]]) assert.ok(names.includes(tool(name)), `${tool(name)} is listed (got ${names.filter((n) => n.startsWith(prefix)).join(', ')})`);
      },
    },
    { what: 'call', op: 'call', tool: tool(echoTool), args: echoArgs, check: (result) => assert.match(JSON.stringify(result.content), new RegExp(`hi ${kind}`)) },
    {
      what: 'progress',
      op: 'call',
      tool: tool(progressTool),
      args: progressArgs,
      check: (result, progress) => {
        succeeded(result);
        assert.equal(progress.length, steps, `progress ${JSON.stringify(progress)}`);
        assert.equal(progress.at(-1), steps);
      },
    },
    { what: 'elicitation', op: 'call', tool: tool(backend.elicit[0]), args: backend.elicit[1], check: (result) => (succeeded(result), assert.match(JSON.stringify(result), /Ann/)) },
    { what: 'sampling', op: 'call', tool: tool(backend.sample[0]), args: backend.sample[1], check: (result) => (succeeded(result), assert.match(JSON.stringify(result), new RegExp(MODEL_SAID))) },
  ];
  if (!kind.endsWith('legacy') && kind !== 'sdk1') operations.unshift({ what: 'era', op: 'era', check: (era) => assert.equal(era, 'modern', 'a 2026-capable client speaks 2026 to the gateway') });
  return operations;
}

/** Runs a cell's operations with one client; returns what failed (empty: the cell holds). */
function runCell(kind: ClientKind, python: string | null, url: string, operations: readonly Operation[]): Promise<string[]> {
  if (!kind.startsWith('python')) return runTs(kind, url, operations);
  const mode = kind.slice('python '.length);
  return runPython(python!, mode === '2026' ? '2026-07-28' : (mode as PythonMode), url, operations);
}

/** The Python client for a Python cell (null for the others); undefined: the cell is skipped. */
function pythonFor(kind: ClientKind, t: { skip(message?: string): void }): string | null | undefined {
  if (!kind.startsWith('python')) return null;
  const found = pythonClient('eras matrix: the Python mcp client');
  if ('skip' in found) return void skipIf(t, found);
  return found.python;
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
      it(`${kind} client × ${backend.name} backend`, async (t) => {
        const python = pythonFor(kind, t);
        if (python === undefined) return;
        const cell = running.find((r) => r.backend === backend)!;
        assert.deepEqual(await runCell(kind, python, cell.url, operationsFor(kind, backend, '')), []);
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
    it(`${kind} client × the group`, async (t) => {
      const python = pythonFor(kind, t);
      if (python === undefined) return;
      // One client does it all, each backend's tools under its prefix.
      const operations = BACKENDS.flatMap((backend) => operationsFor(kind, backend, `${backend.name}_`).map((o) => ({ ...o, what: `${backend.name}: ${o.what}` })));
      assert.deepEqual(await runCell(kind, python, gateway.url, operations), []);
    });
  }
});
