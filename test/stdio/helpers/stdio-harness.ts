/**
 * Driving a stdio child in tests: the fixture server (test/fixtures/stdio-server.mjs) opened as a
 * channel, its messages collected and awaited by id, and whether a process is still alive.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { StdioTransportConfig } from '../../../core/plugin-api/backend.ts';
import type { JsonRpcMessage, JsonRpcResponse } from '../../../core/protocol/jsonrpc.ts';
import type { ChannelClosed } from '../../../core/upstream/channel/channel.ts';
import { StdioChild, stdioOpener } from '../../../core/upstream/stdio/child.ts';
import type { Watchdog } from '../../../core/upstream/stdio/watchdog.ts';
import { REPO_ROOT } from '../../fixtures/processes.ts';

export const STDIO_FIXTURE = join(REPO_ROOT, 'test/fixtures/stdio-server.mjs');

/** A config running `command` (the fixture server with `flags` unless told otherwise). */
export function stdioConfig(flags: readonly string[] = [], over: Partial<StdioTransportConfig> = {}): StdioTransportConfig {
  return {
    kind: 'stdio',
    command: process.execPath,
    args: [STDIO_FIXTURE, ...flags],
    env: {},
    cwd: null,
    shared: false,
    maxProcesses: 1,
    idleTimeoutMs: 60_000,
    startupTimeoutMs: 10_000,
    stopGraceMs: 2_000,
    ...over,
  };
}

export interface OpenOptions {
  readonly maxLineBytes?: number;
  readonly log?: Logger | null;
  readonly watchdog?: Watchdog | null;
}

/** An opened channel, what it delivered, and its end. */
export class OpenedChild {
  readonly channel: StdioChild;
  readonly messages: JsonRpcMessage[] = [];
  readonly closed: Promise<ChannelClosed>;
  closedCalls = 0;
  #waiters: { id: number | string; resolve: (message: JsonRpcResponse) => void }[] = [];
  #nextId = 1;

  constructor(name: string, config: StdioTransportConfig, options: OpenOptions = {}) {
    let reportClosed!: (error: ChannelClosed) => void;
    this.closed = new Promise((resolve) => (reportClosed = resolve));
    const open = stdioOpener(name, config, { maxLineBytes: options.maxLineBytes ?? 1024 * 1024, log: options.log ?? null, watchdog: options.watchdog ?? null });
    this.channel = open(
      {
        message: (message) => {
          this.messages.push(message);
          const at = this.#waiters.findIndex((w) => 'id' in message && w.id === message.id);
          if (at !== -1) this.#waiters.splice(at, 1)[0]!.resolve(message as JsonRpcResponse);
        },
        closed: (error) => {
          this.closedCalls++;
          reportClosed(error);
        },
      },
      [],
    ) as StdioChild;
  }

  /** Sends a request and resolves with its answer (rejects when the channel closes first or on a refused send). */
  request(method: string, params: Record<string, unknown> = {}): Promise<JsonRpcResponse> {
    const id = this.#nextId++;
    const answered = new Promise<JsonRpcResponse>((resolve) => this.#waiters.push({ id, resolve }));
    const refused = this.channel.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }), []);
    if (refused !== null) return Promise.reject(refused);
    return Promise.race([answered, this.closed.then((error) => Promise.reject(error))]);
  }

  /** Calls a tool of the fixture and parses the JSON of its text. */
  async tool(name: string, args: Record<string, unknown> = {}): Promise<unknown> {
    const answer = await this.request('tools/call', { name, arguments: args });
    const text = (answer.result as { content: { text: string }[] }).content[0]!.text;
    return name === 'inspect' ? JSON.parse(text) : text;
  }
}

export interface Inspected {
  readonly pid: number;
  readonly ppid: number;
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly grandchild: number | null;
}

/** A process runs: it exists and is not a zombie (a dead process its parent has not reaped yet). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
  return processState(pid) !== 'Z';
}

/** The state letter of /proc/<pid>/stat (R, S, Z...), or null without /proc or without the process. */
export function processState(pid: number): string | null {
  const path = `/proc/${pid}/stat`;
  if (!existsSync(path)) return null;
  try {
    const stat = readFileSync(path, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).charAt(0);
  } catch {
    return null;
  }
}
