/**
 * The Node baseline of the benchmarks: a bare `http-proxy` reverse proxy with a keep-alive agent
 * (`keepAlive: true, maxSockets: 256`), the way most Node gateways start out. `gatehouse bench`
 * (reference.ts) and the repository's load benchmark (bench/load/http-proxy.ts) both run it.
 *
 * `http-proxy` is a devDependency of gatehouse: an installed gatehouse may not have it, so this
 * file is only ever run as a child process, once `httpProxyMissing()` found the package.
 *
 *   node --import tsx plugins/cli/bench/http-proxy-server.ts <backend origin>   → prints `LISTENING <port>`
 */
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import process from 'node:process';

/** This file, to run as a child process. */
export const HTTP_PROXY_SERVER = fileURLToPath(import.meta.url);

/** Null when the `http-proxy` package resolves from here; else why it cannot be used. */
export function httpProxyMissing(from = import.meta.url): string | null {
  try {
    createRequire(from).resolve('http-proxy');
    return null;
  } catch {
    return 'the http-proxy package is not installed here (it is a devDependency of gatehouse: npm install http-proxy next to it to measure it)';
  }
}

async function main(target: string): Promise<void> {
  const [{ Agent, createServer }, { default: httpProxy }] = await Promise.all([import('node:http'), import('http-proxy')]);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = httpProxy.createProxyServer({ target, agent });
  proxy.on('error', (err, _req, res) => {
    if ('writeHead' in res) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad_gateway', error_description: err.message }));
    } else {
      res.destroy();
    }
  });
  const server = createServer((req, res) => proxy.web(req, res));
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 121_000;
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    process.stdout.write(`LISTENING ${typeof addr === 'object' && addr !== null ? addr.port : 0}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const target = process.argv[2];
  if (target === undefined) {
    process.stderr.write('usage: http-proxy-server.ts <backend origin>\n');
    process.exit(2);
  }
  void main(target);
}
