/**
 * No stdio backend outlives the gateway, even one killed with SIGKILL (which runs no handler of
 * its own): a small watchdog process, one per gateway process, holds the process groups of the
 * running children, and ends them when the gateway is gone.
 *
 * The gateway writes `+<pgid>\n` to the watchdog's stdin when a child starts and `-<pgid>\n` when
 * its group is gone. The watchdog learns that the gateway died, however it died, from the end of
 * its stdin: the kernel closes the gateway's end of the pipe with the process. It then sends
 * SIGTERM to every group it holds, SIGKILL after its grace period to those with a process left,
 * and exits; with no group left it exits at once.
 *
 * The watchdog is `node -e <WATCHDOG_SCRIPT>` (plain JavaScript in a string, so it runs the same
 * under tsx and from an npm install), started with the first child. It is in a session and
 * process group of its own (a terminal's Ctrl-C or hangup, meant for the gateway, does not reach
 * it) and never keeps the gateway running (the process and its stdin are unref'ed). A watchdog
 * that dies while the gateway runs is started again, a few times at most. When it cannot be
 * started, the children still run: a warning says that a killed gateway would leave them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import process from 'node:process';
import type { Logger } from 'pino';

/** Time between SIGTERM and SIGKILL to the groups left when the gateway is gone. */
export const WATCHDOG_GRACE_MS = 5_000;
/** Times a watchdog process is started (again, when the last one died) in a gateway's life. */
const MAX_STARTS = 4;

/** The watchdog's program: argv[1] is the grace period in milliseconds. */
export const WATCHDOG_SCRIPT = `'use strict';
const graceMs = Number(process.argv[1]) > 0 ? Number(process.argv[1]) : ${WATCHDOG_GRACE_MS};
const groups = new Set();
let pending = '';
let ending = false;
const signal = (pgid, sig) => {
  try { process.kill(-pgid, sig); return true; } catch (err) { return err.code === 'EPERM'; }
};
const apply = (line) => {
  const pgid = Number(line.slice(1));
  if (!Number.isSafeInteger(pgid) || pgid <= 1) return;
  if (line[0] === '+') groups.add(pgid);
  else if (line[0] === '-') groups.delete(pgid);
};
const end = () => {
  if (ending) return;
  ending = true;
  const live = [...groups].filter((pgid) => signal(pgid, 'SIGTERM'));
  if (live.length === 0) process.exit(0);
  const deadline = Date.now() + graceMs;
  setInterval(() => {
    const left = live.filter((pgid) => signal(pgid, 0));
    if (left.length > 0 && Date.now() < deadline) return;
    for (const pgid of left) signal(pgid, 'SIGKILL');
    process.exit(0);
  }, 100);
};
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const lines = (pending + chunk).split('\\n');
  pending = lines.pop();
  if (pending.length > 32) pending = '';
  for (const line of lines) apply(line);
});
process.stdin.on('end', end);
process.stdin.on('close', end);
process.stdin.on('error', end);
`;

export interface WatchdogOptions {
  /** Time between SIGTERM and SIGKILL (WATCHDOG_GRACE_MS by default). */
  readonly graceMs?: number;
  readonly log?: Logger | null;
  /** The Node.js executable that runs the watchdog (process.execPath; tests name one that is missing). */
  readonly execPath?: string;
}

export class Watchdog {
  readonly #graceMs: number;
  readonly #log: Logger | null;
  readonly #execPath: string;
  /** The groups the watchdog holds now (written again to a watchdog started anew). */
  readonly #groups = new Set<number>();
  #process: ChildProcess | null = null;
  #starts = 0;

  constructor(options: WatchdogOptions = {}) {
    this.#graceMs = options.graceMs ?? WATCHDOG_GRACE_MS;
    this.#log = options.log ?? null;
    this.#execPath = options.execPath ?? process.execPath;
  }

  /** The watchdog process's pid, when one runs. */
  get pid(): number | undefined {
    return this.#process?.pid;
  }

  /** A child leading group `pgid` started: the watchdog ends the group if the gateway dies. */
  watch(pgid: number): void {
    if (!Number.isSafeInteger(pgid) || pgid <= 1 || this.#groups.has(pgid)) return;
    this.#groups.add(pgid);
    if (this.#process === null) this.#process = this.#start();
    else this.#process.stdin?.write(`+${pgid}\n`);
  }

  /** Group `pgid` is gone (the gateway ended it): the watchdog forgets it. */
  unwatch(pgid: number): void {
    if (!this.#groups.delete(pgid)) return;
    this.#process?.stdin?.write(`-${pgid}\n`);
  }

  /** Starts a watchdog process holding every group watched now; null when it cannot be started (said once). */
  #start(): ChildProcess | null {
    if (this.#starts >= MAX_STARTS) return null;
    this.#starts++;
    let child: ChildProcess;
    try {
      child = spawn(this.#execPath, ['-e', WATCHDOG_SCRIPT, String(this.#graceMs)], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        cwd: '/',
        env: watchdogEnvironment(),
      });
    } catch (err) {
      this.#lost(null, err);
      return null;
    }
    child.once('error', (err) => this.#lost(child, err));
    child.once('exit', (code, signal) => this.#lost(child, new Error(signal === null ? `exited with status ${code}` : `was killed by ${signal}`)));
    const stdin = child.stdin!;
    // The watchdog is gone (its exit says so): writes to it fail quietly.
    stdin.on('error', () => {});
    child.unref();
    (stdin as Socket).unref();
    for (const pgid of this.#groups) stdin.write(`+${pgid}\n`);
    return child;
  }

  /**
   * The watchdog process could not be started (said once, not tried again), or died while the
   * gateway runs (started again while groups are held, a few times at most).
   */
  #lost(child: ChildProcess | null, err: unknown): void {
    if (child !== null && this.#process !== child) return;
    this.#process = null;
    const started = child !== null && child.pid !== undefined;
    if (!started) this.#starts = MAX_STARTS;
    const retry = started && this.#groups.size > 0 && this.#starts < MAX_STARTS;
    this.#log?.warn(
      { err, starts: this.#starts },
      `the stdio watchdog process ${started ? 'stopped' : 'could not be started'} (${(err as Error).message}): ${retry ? 'it is started again' : 'if the gateway is killed, its stdio backends are left running'}`,
    );
    if (retry) this.#process = this.#start();
  }
}

/** The gateway's environment, without NODE_OPTIONS (the watchdog is plain JavaScript: no loader, no preloads). */
function watchdogEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  return env;
}

let shared: Watchdog | null = null;

/** The gateway process's one watchdog (created on first use, with the first caller's log). */
export function processWatchdog(log: Logger | null = null): Watchdog {
  shared ??= new Watchdog({ log });
  return shared;
}
