/**
 * The C reference of the load benchmark: nginx (Debian package) as a reverse proxy with
 * upstream keep-alive, run from its own config in a temp dir so it needs no root and touches
 * nothing under /etc or /var. The config is `gatehouse bench`'s (plugins/cli/bench/nginx.ts),
 * so both measure the same reference.
 *
 * One master and one worker (`worker_processes 1`, `daemon off`): the worker does the work;
 * CPU and RSS are summed over the master's process tree (the master is idle under load).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findNginx, nginxArgs, nginxConfig, nginxVersion as versionOf } from '../../plugins/cli/bench/nginx.ts';
import { processTree } from './cpu.ts';
import { freePort, isAlive, spawnChild, startTimeout, tcpOpen, trackPid, waitUntil } from './process.ts';
import { NotAvailable, type Target } from './target.ts';

/** BENCH_NGINX, else nginx on PATH, else /usr/sbin/nginx. */
export function nginxBinary(): string {
  return process.env['BENCH_NGINX'] ?? findNginx() ?? 'nginx';
}

/** `nginx/1.22.1`, or undefined when nginx is not installed. */
export function nginxVersion(): string | undefined {
  return versionOf(nginxBinary());
}

/** Writes the config into `<tmpDir>/nginx`, starts nginx, resolves once it accepts connections. */
export async function startNginx(tmpDir: string, backendUrl: string): Promise<Target> {
  const version = nginxVersion();
  if (version === undefined) throw new NotAvailable(`${nginxBinary()} not found (apt-get install -y nginx-light)`);
  const dir = join(tmpDir, 'nginx');
  mkdirSync(dir, { recursive: true });
  const backend = new URL(backendUrl);
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConfig(dir, port, Number(backend.port)));

  const child = spawnChild('nginx', nginxBinary(), nginxArgs(conf, dir));
  const errorLog = (): string => {
    try {
      return readFileSync(join(dir, 'error.log'), 'utf8').trim().split('\n').slice(-10).join('\n');
    } catch {
      return '';
    }
  };
  try {
    await waitUntil(`nginx to listen on ${port}`, () => tcpOpen(port), startTimeout(10_000), child);
    // The worker is forked right after the listen sockets are opened.
    await waitUntil('the nginx worker', () => Promise.resolve(processTree([child.pid]).length > 1), startTimeout(5_000), child);
  } catch (err) {
    await child.stop();
    throw new Error(`${(err as Error).message}\n${errorLog()}`);
  }
  const workers = processTree([child.pid]).filter((pid) => pid !== child.pid);
  for (const pid of workers) trackPid(pid);

  return {
    url: `http://127.0.0.1:${port}${backend.pathname}`,
    pids: [child.pid],
    async stop() {
      await child.stop(); // SIGTERM: fast shutdown, the master stops its worker
      for (const pid of workers) {
        if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      }
    },
  };
}
