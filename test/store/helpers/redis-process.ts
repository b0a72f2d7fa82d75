/**
 * One `redis-server` process for tests (a master, a replica or, with `--sentinel`, a sentinel)
 * on a free 127.0.0.1 port, with its config in a given directory. Processes are SIGKILLed to
 * stop (no data to keep, no shutdown waits), and a process-exit hook kills any left over.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, waitFor } from '../../fixtures/processes.ts';

export interface RedisProcess {
  readonly role: string;
  readonly port: number;
  /** `127.0.0.1:<port>` */
  readonly address: string;
  readonly child: ChildProcess;
  /** The process's output so far (its log), for failure messages. */
  output(): string;
  /** SIGKILLs the process and waits for it to exit. */
  kill(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** The redis-server binary to use (REDIS_SERVER or redis-server on PATH), or why there is none. */
export function redisServerBinary(): { path: string } | { missing: string } {
  const path = process.env.REDIS_SERVER ?? 'redis-server';
  const probe = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 5_000 });
  if (probe.error !== undefined) return { missing: `${path} cannot be run (${probe.error.message})` };
  if (probe.status !== 0) return { missing: `${path} --version exited with ${probe.status}` };
  return { path };
}

/** A short-lived client for probing a test process (no retries, no queue). */
export function probeClient(port: number, password: string | null = null, host = '127.0.0.1'): Redis {
  const client = new Redis({
    host,
    port,
    ...(password !== null ? { password } : {}),
    lazyConnect: true,
    retryStrategy: null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    connectTimeout: 1_000,
    commandTimeout: 2_000,
  });
  client.on('error', () => {});
  return client;
}

/** Runs `fn` with a fresh probe client and disconnects it afterwards. */
export async function withProbe<T>(port: number, password: string | null, fn: (client: Redis) => Promise<T>, host = '127.0.0.1'): Promise<T> {
  const client = probeClient(port, password, host);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

export interface StartOptions {
  readonly binary: string;
  readonly dir: string;
  readonly role: string;
  /** Config lines after `port`/`bind`/`dir` (the port is chosen here). */
  readonly config: (port: number) => readonly string[];
  readonly sentinel?: boolean;
  /** Password to PING it with while waiting for it to answer. */
  readonly password?: string | null;
}

const MAX_OUTPUT = 64 * 1024;

async function startOnce(options: StartOptions, port: number): Promise<RedisProcess> {
  const file = join(options.dir, `${options.role}-${port}.conf`);
  const lines = [`port ${port}`, 'bind 127.0.0.1', `dir ${options.dir}`, 'logfile ""', 'save ""', 'appendonly no', ...options.config(port)];
  await writeFile(file, `${lines.join('\n')}\n`);
  const child = spawn(options.binary, [file, ...(options.sentinel === true ? ['--sentinel'] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let output = '';
  const append = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-MAX_OUTPUT);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));
  const node: RedisProcess = {
    role: options.role,
    port,
    address: `127.0.0.1:${port}`,
    child,
    output: () => output,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  try {
    await waitFor(async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited early`);
      return (await withProbe(port, options.password ?? null, (c) => c.ping())) === 'PONG';
    }, 5_000, 25);
  } catch (err) {
    await node.kill();
    throw new Error(`redis ${options.role} on port ${port} did not start: ${(err as Error).message}\n${output}`);
  }
  return node;
}

/** Starts one process on a free port; retries with another port when the chosen one was taken. */
export async function startRedisProcess(options: StartOptions): Promise<RedisProcess> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      return await startOnce(options, await freePort());
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}
