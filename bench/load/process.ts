/**
 * Child processes of the load benchmark: spawning, waiting until they serve, and cleaning up.
 *
 * Every process the harness starts is tracked here, so that a normal end, an error, Ctrl-C
 * (SIGINT) or SIGTERM all leave no stray nginx or node process behind:
 * - `spawnChild` registers the child; `stopAll()` stops every registered child (SIGTERM, then
 *   SIGKILL after a grace period) and every extra pid given to `trackPid` (nginx workers).
 * - `installCleanupHandlers()` runs `stopAll()` on SIGINT/SIGTERM and, synchronously with
 *   SIGKILL, on process exit as a last resort. `onCleanup` steps (temp dir removal) run last.
 * - On Linux, children are started through `setpriv --pdeathsig TERM` when available, so that
 *   even a SIGKILL of the harness makes the kernel signal them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { request } from 'node:http';
import { resolve } from 'node:path';

const TAIL_LINES = 40;
const SETPRIV = '/usr/bin/setpriv';
const useSetpriv = process.platform === 'linux' && existsSync(SETPRIV);

/** A process started by the harness, with the tail of its output kept for diagnostics. */
export class ManagedChild {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<string>;
  exitedWith: string | null = null;
  private readonly tail: string[] = [];
  private readonly lineWaiters: Array<(line: string) => void> = [];
  private partial = '';

  constructor(name: string, proc: ChildProcess) {
    if (proc.pid === undefined) throw new Error(`${name}: spawn failed`);
    this.name = name;
    this.proc = proc;
    this.pid = proc.pid;
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.exitedWith = signal ?? String(code);
        children.delete(this);
        resolve(this.exitedWith);
      });
    });
    proc.stdout?.on('data', (chunk: Buffer) => this.onOutput(chunk));
    proc.stderr?.on('data', (chunk: Buffer) => this.onOutput(chunk));
  }

  /** Last lines of stdout+stderr, for error messages. */
  output(): string {
    return [...this.tail, this.partial].filter((l) => l.length > 0).join('\n');
  }

  /** Resolves with the first line matching `re` (and its match), rejects on exit or timeout. */
  waitForLine(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`${this.name}: no line matching ${re} within ${timeoutMs} ms`)), timeoutMs);
      const onLine = (line: string): void => {
        const m = re.exec(line);
        if (m !== null) done(null, m);
      };
      const onExit = (how: string): void => done(new Error(`${this.name} exited (${how}) before it was ready:\n${this.output()}`));
      const done = (err: Error | null, m?: RegExpMatchArray): void => {
        clearTimeout(timer);
        const i = this.lineWaiters.indexOf(onLine);
        if (i >= 0) this.lineWaiters.splice(i, 1);
        if (err !== null) reject(err);
        else if (m !== undefined) resolve(m);
      };
      this.lineWaiters.push(onLine);
      for (const line of this.tail) onLine(line);
      void this.exited.then(onExit);
    });
  }

  /** SIGTERM, then SIGKILL after `graceMs`. Resolves once the process has exited. */
  async stop(graceMs = 3000): Promise<void> {
    if (this.exitedWith !== null) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  private onOutput(chunk: Buffer): void {
    const lines = (this.partial + chunk.toString('utf8')).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      this.tail.push(line);
      if (this.tail.length > TAIL_LINES) this.tail.shift();
      for (const waiter of [...this.lineWaiters]) waiter(line);
    }
  }
}

const children = new Set<ManagedChild>();
const extraPids = new Set<number>();
const finalizers = new Set<() => void>();

/** A synchronous step run once every process is stopped (e.g. removing the temp dir). */
export function onCleanup(fn: () => void): () => void {
  finalizers.add(fn);
  return () => finalizers.delete(fn);
}

function runFinalizers(): void {
  for (const fn of finalizers) {
    try {
      fn();
    } catch {
      /* best effort */
    }
  }
  finalizers.clear();
}

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** A node child writes V8 CPU profiles under this label when BENCH_PROFILE_DIR is set (`profileArgs`). */
  profile?: string;
}

/**
 * With BENCH_PROFILE_DIR set, a node child started with these arguments writes a V8 CPU profile
 * when it exits (`<dir>/<label>/CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile`, one per thread:
 * thread 0 is the main one, the others tsx's module loader; open it in Chrome DevTools, or let
 * `npm run bench:profile` summarise it): where a row's microseconds go.
 */
export function profileArgs(label: string): string[] {
  const dir = process.env['BENCH_PROFILE_DIR'];
  return dir === undefined || dir === '' ? [] : ['--cpu-prof', '--cpu-prof-dir', resolve(dir, label)];
}

/** What runs each child spawned while it is set, around its command (instructions.ts: callgrind). */
export interface ChildWrapper {
  wrap(command: string, args: readonly string[]): [string, string[]];
  /** How many times longer a wrapped child takes to get ready: start timeouts are multiplied by it. */
  readonly slowdown: number;
}

let wrapper: ChildWrapper | null = null;

/** Sets (or, with null, removes) the wrapper of the children spawned from now on. */
export function setChildWrapper(next: ChildWrapper | null): void {
  wrapper = next;
}

/** A start timeout, longer while children are wrapped. */
export function startTimeout(ms: number): number {
  return ms * (wrapper?.slowdown ?? 1);
}

/** Starts `command args` with piped output, tracked for cleanup. */
export function spawnChild(name: string, command: string, args: string[], opts: SpawnOptions = {}): ManagedChild {
  const [program, programArgs] = wrapper === null ? [command, args] : wrapper.wrap(command, args);
  const [cmd, argv] = useSetpriv ? [SETPRIV, ['--pdeathsig', 'TERM', '--', program, ...programArgs]] : [program, programArgs];
  const proc = spawn(cmd, argv, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child = new ManagedChild(name, proc);
  children.add(child);
  return child;
}

/** Starts one of the node child scripts of bench/load (TypeScript, through tsx). */
export function spawnNodeScript(name: string, scriptPath: string, args: string[], opts: SpawnOptions = {}): ManagedChild {
  const profile = opts.profile === undefined ? [] : profileArgs(opts.profile);
  return spawnChild(name, process.execPath, [...profile, '--import', 'tsx', scriptPath, ...args], opts);
}

/** Records a pid the harness did not spawn itself (nginx workers) so cleanup can kill it. */
export function trackPid(pid: number): void {
  extraPids.add(pid);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops every tracked process, then runs the `onCleanup` steps. Safe to call more than once. */
export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => c.stop()));
  for (const pid of extraPids) {
    if (isAlive(pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  extraPids.clear();
  runFinalizers();
}

function killAllSync(): void {
  for (const c of children) c.proc.kill('SIGKILL');
  for (const pid of extraPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  runFinalizers();
}

let installed = false;

/** SIGINT/SIGTERM stop every child and exit; process exit kills what is left. */
export function installCleanupHandlers(): void {
  if (installed) return;
  installed = true;
  const onSignal = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\nbench: ${signal}, stopping child processes...\n`);
    void stopAll().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', killAllSync);
}

/** A TCP port that was free on 127.0.0.1 a moment ago (for configs that must name their port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `probe()` resolves true; rejects when `child` exits or on timeout. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  child?: ManagedChild,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child?.exitedWith != null) {
      throw new Error(`${child.name} exited (${child.exitedWith}) before ${what}:\n${child.output()}`);
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${child ? `:\n${child.output()}` : ''}`);
    }
    await sleep(100);
  }
}

/** True when something accepts TCP connections on 127.0.0.1:port (one copy, with `gatehouse bench`'s). */
export { tcpOpen } from '../../plugins/cli/bench/processes.ts';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request on a fresh connection (no agent), with a timeout. */
export function httpRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
  timeoutMs = 2000,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
