/**
 * Two rows for `server.workers`: the anonymous transparent gateway with its sessions in Redis,
 * served by one process and by two workers on the one port (plugins/cli/workers/). Both rows
 * have the same Redis session storage, so that what differs is the workers alone: their req/s
 * is the figure (one process uses one core at most), their CPU µs per request what the primary's
 * hand-off of connections and a second process cost (the row's process tree: the primary and its
 * workers). `BENCH_ROWS=workers` runs just these two (add `nginx,http-proxy` for the ratios).
 *
 * On a machine with as many cores as workers, the backend (one process) and wrk share them with
 * the workers: the gain the rows show is bounded by what is left to the gateway.
 *
 * Redis: 127.0.0.1:6379, or BENCH_REDIS=host:port; absent, the rows are not available (with the
 * reason), and the run goes on.
 */
import { Redis } from 'ioredis';
import { anonymousConfig, gatehouseRow, type GatehouseConfigContext } from './gatehouse.ts';
import { NotAvailable, type Row } from './target.ts';

const REDIS = process.env['BENCH_REDIS'] ?? '127.0.0.1:6379';

/** The anonymous config with its sessions in Redis, served by `workers` processes. */
function workersConfig(workers: number): (ctx: GatehouseConfigContext) => string {
  return (ctx) => {
    const storage = `{type: redis, redis: {addr: "${REDIS}", keyPrefix: "gatehouse-bench:${process.pid}:"}}`;
    const config = anonymousConfig(ctx).replace('config: {groupRef: bench}', `config: {groupRef: bench, session: {storage: ${storage}}}`);
    return `${config}  server: {workers: ${workers}}\n`;
  };
}

/** Redis answers PING, or the row is not available. */
async function requireRedis(): Promise<void> {
  const [host, port] = [REDIS.slice(0, REDIS.lastIndexOf(':')), Number(REDIS.slice(REDIS.lastIndexOf(':') + 1))];
  const client = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    throw new NotAvailable(`Redis at ${REDIS} does not answer (${(err as Error).message}): the workers rows share their sessions through it (BENCH_REDIS=host:port)`);
  } finally {
    client.disconnect();
  }
}

export function workersRows(): Row[] {
  return [1, 2].map((workers) => {
    const row = gatehouseRow({
      name: `gatehouse (anonymous, Redis sessions, ${workers} worker${workers === 1 ? '' : 's'})`,
      label: `workers-${workers}`,
      config: workersConfig(workers),
      // /readyz answers once one worker serves: wrk's connections must find both.
      ...(workers > 1 ? { readyLine: /"msg":"every worker is ready"/ } : {}),
    });
    return {
      ...row,
      async start(ctx) {
        await requireRedis();
        return row.start(ctx);
      },
    };
  });
}
