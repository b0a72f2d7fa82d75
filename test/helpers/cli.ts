/**
 * The `gatehouse` command as a child process, as a user runs it: one-shot commands (`run`), and
 * servers (`serve`) that are ready once they log their "listening" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { buildProgram } from '../../plugins/cli/program.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';

/** The executable `package.json` names in `bin`. */
export const BIN = `${REPO_ROOT}plugins/cli/bin.mjs`;

/** Every command of the CLI, as its words: [], ['vmcp'], ['vmcp', 'serve'], ... */
export function commandPaths(command: Command = buildProgram(), path: string[] = []): string[][] {
  return [path, ...command.commands.flatMap((sub) => commandPaths(sub, [...path, sub.name()]))];
}

/** The command `path` names in the CLI's command tree. */
export function commandAt(path: readonly string[]): Command {
  return path.reduce<Command>((command, name) => command.commands.find((sub) => sub.name() === name)!, buildProgram());
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `gatehouse ...args` to its end. */
export function runCli(args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: REPO_ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface ServedCli {
  readonly child: ChildProcess;
  /** The URL from the "listening" log line (the MCP endpoint, or the registry's base URL). */
  readonly url: string;
  /** Every JSON log line so far. */
  readonly logs: Record<string, unknown>[];
  readonly exited: Promise<number | null>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Which `gatehouse` serves, and from where. */
export interface ServeFrom {
  /** The executable (default: this checkout's, BIN); e.g. an installed package's `node_modules/.bin/gatehouse`. */
  readonly bin?: string;
  /** The working directory (default: the checkout). */
  readonly cwd?: string;
  /** The process's whole environment (default: this one's). */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Starts `gatehouse <system> serve --config FILE --port 0 ...extra` and waits until it listens;
 * `nodeArgs` go to node itself (e.g. `--max-old-space-size=384`).
 */
export async function serveCli(system: 'vmcp' | 'registry', config: string, extra: string[] = [], nodeArgs: string[] = [], from: ServeFrom = {}): Promise<ServedCli> {
  const child = spawn(process.execPath, [...nodeArgs, from.bin ?? BIN, system, 'serve', '--config', config, '--port', '0', ...extra], { cwd: from.cwd ?? REPO_ROOT, env: from.env ?? process.env });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, 'close').then(([code]) => code as number | null);
  const listening = system === 'vmcp' ? 'virtual MCP server listening' : 'registry server listening';
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(entry);
      if (entry.msg === listening) resolve(entry.url as string);
    });
    void exited.then((code) => reject(new Error(`gatehouse ${system} serve exited with ${code} before listening: ${stderr}`)));
  });
  return {
    child,
    url,
    logs,
    exited,
    stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
