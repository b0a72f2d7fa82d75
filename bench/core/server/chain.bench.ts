/**
 * The plugin chain's cost per phase (core/server/chain.ts): a phase no plugin uses is `null` (one
 * branch), and 1 or 5 no-op plugins per phase, with and without the per-plugin timing the
 * gateway records for /metrics.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Bench } from 'tinybench';
import { Chain, runHooks } from '../../../core/server/chain.ts';
import { Context } from '../../../core/plugin-api/context.ts';
import type { JsonRpcRequest } from '../../../core/protocol/jsonrpc.ts';
import { createLogger } from '../../../core/observe/log.ts';
import { GatewayMetrics } from '../../../core/observe/metrics.ts';
import type { Plugin } from '../../../core/plugin-api/plugin.ts';

const req = { url: '/mcp', headers: {}, rawHeaders: ['Host', '127.0.0.1:4483', 'Content-Type', 'application/json'] } as unknown as IncomingMessage;
const scope = { log: createLogger('silent'), challenge: null };
const ctx = new Context(req, {} as ServerResponse, scope, 0);
const message: JsonRpcRequest = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };

function noopPlugins(count: number): Plugin[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `noop-${i}`,
    authenticate: () => undefined,
    authorize: () => undefined,
    onMessage: () => undefined,
  }));
}

const untimed = () => null;
const metrics = new GatewayMetrics({ processMetrics: false });

export let sink: unknown;

export default function register(bench: Bench): void {
  for (const count of [0, 1, 5]) {
    for (const [label, timer] of [['untimed', untimed], ['timed', metrics.phaseTimer]] as const) {
      if (count === 0 && label === 'timed') continue;
      const chain = new Chain(noopPlugins(count), timer);
      bench.add(`chain: authenticate+authorize+onMessage, ${count} no-op plugin(s)${count === 0 ? '' : `, ${label}`}`, () => {
        // Exactly what gateway-server.ts and intake.ts do per request: a null check per phase, else the runner.
        if (chain.authenticate !== null) sink = runHooks(chain.authenticate, ctx, undefined);
        if (chain.authorize !== null) sink = runHooks(chain.authorize, ctx, undefined);
        const hooks = chain.messageHooks(message.method);
        if (hooks !== null) sink = runHooks(hooks, ctx, message);
      });
    }
  }
  bench.add('context: new Context (per request)', () => {
    sink = new Context(req, {} as ServerResponse, scope, 0);
  });
}
