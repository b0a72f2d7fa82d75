/**
 * The two references `gatehouse bench` measures beside the gateway, in front of the same echo
 * backend, so that its figures read as ratios: nginx as a keep-alive reverse proxy (the C floor,
 * nginx.ts) and a bare `http-proxy` with a keep-alive agent (the Node baseline,
 * http-proxy-server.ts), the ones the repository's load benchmark compares Gatehouse with.
 *
 * Either may be missing where the bench runs: nginx is looked for with `--nginx`, on PATH, then
 * at /usr/sbin/nginx; http-proxy is a devDependency, so an installed gatehouse may not have it.
 * A reference that is missing or does not start is `ReferenceSkipped` with the reason, printed
 * in the report; the bench goes on without it.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import process from 'node:process';
import { tree } from './cpu.ts';
import { HTTP_PROXY_SERVER, httpProxyMissing } from './http-proxy-server.ts';
import { findNginx, nginxArgs, nginxConfig, nginxVersion } from './nginx.ts';
import { Child, ChildExited, tcpOpen } from './processes.ts';

/** A reference that cannot be measured here: why. */
export class ReferenceSkipped extends Error {}

/** A running reference proxy: its process (CPU of its tree) and its origin, `http://127.0.0.1:<port>`. */
export interface Reference {
  readonly child: Child;
  readonly origin: string;
}

const START_TIMEOUT_MS = 15_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    return '';
  }
}

/** nginx in `dir` (its config, logs and temp files), in front of 127.0.0.1:`backendPort`; `given`: `--nginx`. */
export async function startNginx(dir: string, backendPort: number, given?: string): Promise<Reference> {
  const binary = findNginx(given);
  if (binary === null) {
    throw new ReferenceSkipped(given === undefined ? 'nginx not found on PATH nor at /usr/sbin/nginx (apt-get install nginx-light, or --nginx PATH)' : `--nginx ${given}: not an executable file`);
  }
  if (nginxVersion(binary) === undefined) throw new ReferenceSkipped(`${binary} -v does not answer as nginx`);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConfig(dir, port, backendPort));
  const child = new Child('nginx', binary, nginxArgs(conf, dir));
  const deadline = Date.now() + START_TIMEOUT_MS;
  // Listening first, then the worker forked: the master alone answers nothing.
  while (!((await tcpOpen(port)) && tree(child.pid).length > 1)) {
    if (child.exitCode !== undefined || Date.now() > deadline) {
      await child.stop();
      throw new ReferenceSkipped(`nginx did not start (${child.exitCode === undefined ? 'not ready in time' : `exit ${String(child.exitCode)}`}): ${tail(join(dir, 'error.log')) || child.output()}`);
    }
    await sleep(50);
  }
  child.adopt(tree(child.pid));
  return { child, origin: `http://127.0.0.1:${port}` };
}

/** The bare http-proxy server in front of `backendOrigin`, run with tsx as the echo backend is. */
export async function startHttpProxy(backendOrigin: string): Promise<Reference> {
  const missing = httpProxyMissing();
  if (missing !== null) throw new ReferenceSkipped(missing);
  const child = new Child('the http-proxy baseline', process.execPath, ['--import', import.meta.resolve('tsx'), HTTP_PROXY_SERVER, backendOrigin]);
  try {
    const port = await child.waitFor('listen', (line) => /^LISTENING (\d+)$/.exec(line)?.[1], START_TIMEOUT_MS);
    return { child, origin: `http://127.0.0.1:${port}` };
  } catch (err) {
    await child.stop();
    throw new ReferenceSkipped(`the http-proxy server did not start: ${err instanceof ChildExited ? err.output.split('\n').slice(-3).join(' ') : (err as Error).message}`);
  }
}
