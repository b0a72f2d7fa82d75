/**
 * The child processes of `gatehouse bench` (the gateway and the echo backend): started with
 * their output read line by line (a pipe nobody reads would block the gateway's log writes),
 * the last lines kept for error messages, and stopped whatever way the bench ends: its normal
 * end, an error, Ctrl-C or SIGTERM (stopped, then exit), or the process exiting (SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import process from 'node:process';

const TAIL = 30;

export class Child {
  readonly name: string;
  readonly pid: number;
  readonly exited: Promise<number | null>;
  exitCode: number | null | undefined = undefined;
  readonly #proc: ChildProcess;
  readonly #tail: string[] = [];
  readonly #watchers = new Set<(line: string) => void>();
  /** Processes it started that outlive it when it is killed (nginx's worker): killed with it. */
  readonly #adopted = new Set<number>();

  constructor(name: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env) {
    this.name = name;
    this.#proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    if (this.#proc.pid === undefined) throw new Error(`${name}: could not start ${command}`);
    this.pid = this.#proc.pid;
    running.add(this);
    this.exited = new Promise((resolve) => {
      this.#proc.once('close', (code, signal) => {
        this.exitCode = code ?? (signal === null ? null : -1);
        running.delete(this);
        resolve(this.exitCode);
      });
    });
    for (const stream of [this.#proc.stdout!, this.#proc.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.#tail.push(line);
        if (this.#tail.length > TAIL) this.#tail.shift();
        for (const watch of this.#watchers) watch(line);
      });
    }
  }

  /** The last lines of its stdout and stderr. */
  output(): string {
    return this.#tail.join('\n');
  }

  /** The first line (from now on) for which `match` returns a value; rejects if the process ends first or on timeout. */
  waitFor<T>(what: string, match: (line: string) => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#watchers.delete(watch);
      };
      const watch = (line: string): void => {
        const value = match(line);
        if (value === undefined) return;
        done();
        resolve(value);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${this.name} did not ${what} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.#watchers.add(watch);
      void this.exited.then((code) => {
        if (!this.#watchers.has(watch)) return;
        done();
        reject(new ChildExited(this.name, code, this.output()));
      });
    });
  }

  /** Pids of processes it started that would outlive it (nginx's worker when the master is killed): stopped with it. */
  adopt(pids: Iterable<number>): void {
    for (const pid of pids) if (pid !== this.pid) this.#adopted.add(pid);
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves with the exit code. */
  async stop(graceMs = 5000): Promise<number | null> {
    if (this.exitCode !== undefined) {
      this.#killAdopted();
      return this.exitCode;
    }
    this.#proc.kill('SIGTERM');
    const timer = setTimeout(() => this.#proc.kill('SIGKILL'), graceMs);
    const code = await this.exited;
    clearTimeout(timer);
    this.#killAdopted();
    return code;
  }

  kill(): void {
    this.#proc.kill('SIGKILL');
    this.#killAdopted();
  }

  #killAdopted(): void {
    for (const pid of this.#adopted) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone already: the usual case, its parent stopped it */
      }
    }
    this.#adopted.clear();
  }
}

/** A child that ended before it was ready. */
export class ChildExited extends Error {
  readonly code: number | null;
  readonly output: string;

  constructor(name: string, code: number | null, output: string) {
    super(`${name} exited${code === null ? '' : ` with code ${code}`} before it was ready${output === '' ? '' : `:\n${output}`}`);
    this.code = code;
    this.output = output;
  }
}

const running = new Set<Child>();
let installed = false;

/** Ctrl-C and SIGTERM stop every child, then exit; the process's exit kills what is left. */
export function stopChildrenOnExit(): void {
  if (installed) return;
  installed = true;
  const onSignal = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\ngatehouse bench: ${signal}, stopping the gateway and the backend\n`);
    void Promise.all([...running].map((child) => child.stop(2000))).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', () => {
    for (const child of running) child.kill();
  });
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
