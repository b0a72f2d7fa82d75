/**
 * The baseline of the load benchmark: a bare `http-proxy` reverse proxy with a keep-alive
 * agent (`keepAlive: true, maxSockets: 256`), the way most Node gateways start out.
 *
 * As a child process: `node --import tsx bench/load/http-proxy.ts <backend origin>` binds
 * 127.0.0.1 on a free port and prints `LISTENING <port>`.
 */
import { Agent, createServer, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import httpProxy from 'http-proxy';
import { spawnNodeScript } from './process.ts';
import type { Target } from './target.ts';

/** Starts the http-proxy child in front of `backendUrl`; resolves once it listens. */
export async function startHttpProxy(backendUrl: string): Promise<Target> {
  const origin = new URL(backendUrl).origin;
  const child = spawnNodeScript('http-proxy', new URL(import.meta.url).pathname, [origin]);
  const m = await child.waitForLine(/^LISTENING (\d+)$/, 15_000);
  return {
    url: `http://127.0.0.1:${m[1]}${new URL(backendUrl).pathname}`,
    pids: [child.pid],
    stop: () => child.stop(),
  };
}

function main(target: string): void {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = httpProxy.createProxyServer({ target, agent });
  proxy.on('error', (err, _req, res) => {
    if ('writeHead' in res) {
      const r = res as ServerResponse;
      if (!r.headersSent) r.writeHead(502, { 'content-type': 'application/json' });
      r.end(JSON.stringify({ error: 'bad_gateway', error_description: err.message }));
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
    process.stderr.write('usage: http-proxy.ts <backend origin>\n');
    process.exit(2);
  }
  main(target);
}
