/**
 * Runs one git command for the git source (git-source.ts), bounded: what it prints is capped
 * (stdout at the caller's bound, stderr at its last 64 KiB), and when the signal aborts or stdout
 * passes its bound the whole process group is killed (git runs helpers such as
 * `git-remote-https` and `ssh` as children, which must die with it). The promise settles only
 * once every process of the group has let go of its output, so the caller may then delete the
 * directories they used.
 *
 * The environment is exactly the one given: nothing of this process's own (its HOME, its
 * credential helpers, GIT_* variables) reaches git unless the caller passes it.
 */
import { spawn } from 'node:child_process';
import { Buffer } from 'node:buffer';
import process from 'node:process';

export interface GitCommand {
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly signal: AbortSignal;
  /** Largest stdout kept; past it the process is killed and `stdoutOverflow` is set. */
  readonly maxStdoutBytes: number;
  /** Written to stdin, which is then closed (stdin is empty otherwise). */
  readonly stdin?: string;
}

export interface GitResult {
  /** Exit code, null when the process was killed. */
  readonly code: number | null;
  readonly stdout: Buffer;
  /** The end of stderr, as text. */
  readonly stderr: string;
  readonly stdoutOverflow: boolean;
}

const MAX_STDERR_BYTES = 64 * 1024;

/** Thrown when git cannot be started at all (not installed, not executable). */
export class GitUnavailable extends Error {
  override readonly name = 'GitUnavailable';
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/**
 * Runs `binary args` and resolves with its exit code and output. Rejects with the signal's
 * reason when the signal aborted (the processes are dead by then), or with GitUnavailable.
 */
export function runGit(binary: string, command: GitCommand): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    if (command.signal.aborted) return reject(command.signal.reason);
    // detached: a process group of its own, so that killing it reaches git's helpers too.
    const child = spawn(binary, command.args, { cwd: command.cwd, env: command.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stdoutOverflow = false;
    let stderr = Buffer.alloc(0);
    let failedToStart: Error | null = null;

    const onAbort = (): void => killGroup(child.pid);
    command.signal.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      if (stdoutOverflow) return;
      if (stdoutBytes + chunk.length > command.maxStdoutBytes) {
        stdoutOverflow = true;
        killGroup(child.pid);
        return;
      }
      stdout.push(chunk);
      stdoutBytes += chunk.length;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.length > MAX_STDERR_BYTES) stderr = stderr.subarray(stderr.length - MAX_STDERR_BYTES);
    });
    // A git that exits before reading stdin makes the write fail with EPIPE: its exit code says why.
    child.stdin.on('error', () => {});
    child.stdin.end(command.stdin ?? '');
    child.on('error', (err) => {
      failedToStart = err;
    });
    child.on('close', (code) => {
      command.signal.removeEventListener('abort', onAbort);
      if (failedToStart !== null) return reject(new GitUnavailable(`git could not be run (${binary}): ${failedToStart.message}`));
      if (command.signal.aborted) return reject(command.signal.reason);
      resolve({ code, stdout: Buffer.concat(stdout), stderr: stderr.toString('utf8'), stdoutOverflow });
    });
  });
}
