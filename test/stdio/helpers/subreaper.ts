/**
 * Running a process under a child subreaper (Linux, prctl PR_SET_CHILD_SUBREAPER), so that the
 * processes it leaves orphaned are reparented to the subreaper and reaped there, not to PID 1.
 * A test that kills a "gateway" then sees each of its descendants end as it would under an init
 * that reaps (tini, `docker run --init`); where PID 1 does not reap orphans (some sandboxes, Node
 * as PID 1), a killed orphan would stay a zombie whatever the gateway did.
 *
 * The subreaper is a few lines of Python (ctypes, no package): it starts the command, prints
 * `reaped <pid> <wait status>` for each process it reaps, and exits once it has no child left,
 * which is when the command and every process it left behind are gone.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../../fixtures/processes.ts';
import { unavailable, type Skip } from '../../store/helpers/service.ts';

const SUBREAPER = `
import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:
    sys.stderr.write('prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d\\n' % ctypes.get_errno())
    sys.exit(97)
if len(sys.argv) < 2:
    sys.exit(0)
if os.fork() == 0:
    os.execv(sys.argv[1], sys.argv[1:])
while True:
    try:
        pid, status = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    sys.stdout.write('reaped %d %d\\n' % (pid, status))
    sys.stdout.flush()
`;

let found: { python: string } | { reason: string } | undefined;

/** A Python that can be a subreaper here, or why there is none (skipped, a failure under CI=true). */
export function subreaperPython(suite: string): { python: string } | Skip {
  if (found === undefined) {
    const candidates = [process.env['GATEHOUSE_TEST_PYTHON'], join(REPO_ROOT, '.venv/bin/python'), 'python3'].filter((p): p is string => p !== undefined && (p === 'python3' || existsSync(p)));
    const reasons: string[] = [];
    for (const python of candidates) {
      const probe = spawnSync(python, ['-c', SUBREAPER], { encoding: 'utf8', timeout: 30_000 });
      if (probe.status === 0) {
        found = { python };
        break;
      }
      reasons.push(`${python}: ${(probe.stderr || probe.error?.message || `status ${probe.status}`).trim()}`);
    }
    found ??= { reason: `no Python that can be a child subreaper (Linux prctl): ${reasons.join('; ')}` };
  }
  return 'python' in found ? found : unavailable(suite, found.reason);
}

export interface Reaped {
  readonly pid: number;
  /** The signal that ended it (0: it exited). */
  readonly signal: number;
}

/** A command running under the subreaper: its stdout lines (the subreaper's own `reaped` lines apart). */
export class SubreaperRun {
  readonly process: ChildProcess;
  readonly lines: string[] = [];
  readonly reaped: Reaped[] = [];
  /** Settles when the subreaper exited: the command and every process it left are gone. */
  readonly exited: Promise<void>;
  #stderr = '';
  #listeners: (() => void)[] = [];

  constructor(python: string, command: readonly string[]) {
    this.process = spawn(python, ['-c', SUBREAPER, ...command], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.process.stderr!.on('data', (chunk: Buffer) => (this.#stderr = (this.#stderr + chunk.toString()).slice(-64 * 1024)));
    createInterface({ input: this.process.stdout! }).on('line', (line) => {
      const reaped = /^reaped (\d+) (\d+)$/.exec(line);
      if (reaped !== null) this.reaped.push({ pid: Number(reaped[1]), signal: Number(reaped[2]) & 0x7f });
      else this.lines.push(line);
      for (const listener of this.#listeners) listener();
    });
    this.exited = new Promise((resolve) => this.process.once('exit', () => resolve()));
  }

  /** What the command and the subreaper wrote to stderr (the last 64 KiB). */
  get stderr(): string {
    return this.#stderr;
  }

  /** The first line of the command's stdout that `match` takes, parsed as JSON. */
  async json<T>(match: (value: Record<string, unknown>) => boolean, timeoutMs = 20_000): Promise<T> {
    const find = (): T | undefined => {
      for (const line of this.lines) {
        if (!line.startsWith('{')) continue;
        const value = JSON.parse(line) as Record<string, unknown>;
        if (match(value)) return value as T;
      }
      return undefined;
    };
    return await new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such line within ${timeoutMs} ms; stdout: ${this.lines.join('\n')}; stderr: ${this.#stderr}`)), timeoutMs);
      const check = (): void => {
        const value = find();
        if (value === undefined) return;
        clearTimeout(timer);
        this.#listeners = this.#listeners.filter((l) => l !== check);
        resolve(value);
      };
      this.#listeners.push(check);
      void this.exited.then(() => setTimeout(check, 0));
      check();
    });
  }

  /** Waits for the subreaper's exit, at most `timeoutMs`; returns the milliseconds it took, or throws. */
  async gone(timeoutMs: number): Promise<number> {
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`processes still running after ${timeoutMs} ms; stderr: ${this.#stderr}`)), timeoutMs);
    });
    try {
      await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
    return Date.now() - started;
  }
}
