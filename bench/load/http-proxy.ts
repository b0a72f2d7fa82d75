/**
 * The baseline of the load benchmark: a bare `http-proxy` reverse proxy with a keep-alive
 * agent, as a child process. The server is `gatehouse bench`'s
 * (plugins/cli/bench/http-proxy-server.ts), so both measure the same baseline.
 */
import { HTTP_PROXY_SERVER } from '../../plugins/cli/bench/http-proxy-server.ts';
import { spawnNodeScript, startTimeout } from './process.ts';
import type { Target } from './target.ts';

/** Starts the http-proxy child in front of `backendUrl`; resolves once it listens. */
export async function startHttpProxy(backendUrl: string): Promise<Target> {
  const origin = new URL(backendUrl).origin;
  const child = spawnNodeScript('http-proxy', HTTP_PROXY_SERVER, [origin], { profile: 'http-proxy' });
  const m = await child.waitForLine(/^LISTENING (\d+)$/, startTimeout(15_000));
  return {
    url: `http://127.0.0.1:${m[1]}${new URL(backendUrl).pathname}`,
    pids: [child.pid],
    stop: () => child.stop(),
  };
}
