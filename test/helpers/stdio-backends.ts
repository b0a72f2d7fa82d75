/**
 * Stdio backends through the real gateway, for the end-to-end tests (test/gateway/stdio-*): the
 * MCPServer fields that run the fixture server (test/fixtures/stdio-server.mjs) or
 * server-everything as real child processes, what a fixture child says of itself (`inspect`,
 * through the gateway with the SDK client), what a failed call says, and whether a process is
 * gone (`kill(pid, 0)` answers ESRCH: no process, and no zombie either, as its parent reaped it).
 */
import { join } from 'node:path';
import type { ConnectedClient } from '../fixtures/client.ts';
import { textOf } from '../fixtures/client.ts';
import { REPO_ROOT, waitFor } from '../fixtures/processes.ts';

export const STDIO_FIXTURE_SERVER = join(REPO_ROOT, 'test/fixtures/stdio-server.mjs');
export const SERVER_EVERYTHING = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/**
 * The transport fields (YAML lines under `spec:`) of the fixture server run by this Node, with
 * its `flags`; `more` adds lines (`stdio: {...}`, `env: [...]`, `cwd: ...`).
 */
export function fixtureBackend(flags: readonly string[] = [], ...more: string[]): string {
  return [`transport: stdio`, `command: ${JSON.stringify(process.execPath)}`, `args: ${JSON.stringify([STDIO_FIXTURE_SERVER, ...flags])}`, ...more].join('\n');
}

/** server-everything over stdio (its default mode), as users run it. */
export function everythingBackend(...more: string[]): string {
  return [`transport: stdio`, `command: ${JSON.stringify(process.execPath)}`, `args: ${JSON.stringify([SERVER_EVERYTHING, 'stdio'])}`, ...more].join('\n');
}

/** What the fixture's `inspect` tool says of its process. */
export interface ChildFacts {
  readonly pid: number;
  readonly ppid: number;
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly grandchild: number | null;
}

/** Calls the fixture's `inspect` tool of backend `backend` (`<backend>_inspect`, or `inspect` when served transparently). */
export async function inspectChild(c: ConnectedClient, backend: string | null): Promise<ChildFacts> {
  const result = await c.client.callTool({ name: backend === null ? 'inspect' : `${backend}_inspect`, arguments: {} });
  return JSON.parse(textOf(result)) as ChildFacts;
}

/** What a failed call is rejected with: the SDK's McpError carries the JSON-RPC error's code and data. */
export interface CallFailure extends Error {
  readonly code?: number;
  readonly data?: { readonly error?: string; readonly backend?: string };
}

/** The error a call failed with (it must fail: a result is a test failure). */
export async function failureOf(call: Promise<unknown>): Promise<CallFailure> {
  return call.then(
    (result) => {
      throw new Error(`the call was expected to fail; it answered ${JSON.stringify(result).slice(0, 500)}`);
    },
    (err: CallFailure) => err,
  );
}

/** The process is gone: `kill(pid, 0)` fails with ESRCH (a zombie would still answer). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return true;
    throw err;
  }
}

/** Waits until every pid is gone; fails naming those left after `timeoutMs`. */
export async function waitGone(pids: readonly number[], timeoutMs = 10_000): Promise<void> {
  try {
    await waitFor(() => pids.every(processGone), timeoutMs, 25);
  } catch {
    throw new Error(`still running after ${timeoutMs} ms: ${pids.filter((pid) => !processGone(pid)).join(', ')}`);
  }
}
