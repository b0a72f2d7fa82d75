/**
 * A Sentinel-managed Redis for tests: one master, `replicas` replicas (`replicaof`) and
 * `sentinels` sentinels (`sentinel monitor <name> 127.0.0.1 <port> <quorum>` with short
 * down-after / failover timeouts), each a `redis-server` on a free 127.0.0.1 port, configs in
 * a temp dir. Resolves once replication is up and every sentinel knows every replica and
 * every other sentinel. `stop()` kills them all and removes the dir (call it in `after`).
 * Without a redis-server binary: skipped with the reason (a failure under CI=true).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../fixtures/processes.ts';
import { redisServerBinary, startRedisProcess, withProbe, type RedisProcess } from './redis-process.ts';
import { unavailable, type Skip } from './service.ts';

export interface TopologyOptions {
  readonly replicas: number;
  readonly sentinels: number;
  /** Default: a majority of the sentinels. */
  readonly quorum?: number;
  /** Default `gatehouse-test`. */
  readonly masterName?: string;
  /** requirepass of master and replicas (and masterauth / sentinel auth-pass). */
  readonly password?: string;
  /** requirepass of the sentinels. */
  readonly sentinelPassword?: string;
  /** Default 1000 ms. */
  readonly downAfterMs?: number;
}

export interface RedisTopology {
  readonly masterName: string;
  /** The master at start (after a failover it is a replica, or dead). */
  readonly master: RedisProcess;
  readonly replicas: readonly RedisProcess[];
  readonly sentinels: readonly RedisProcess[];
  readonly sentinelAddresses: readonly string[];
  readonly password: string | null;
  readonly sentinelPassword: string | null;
  /** The port of the master according to the first sentinel that answers. */
  currentMasterPort(): Promise<number>;
  /** The process listening on `port`. */
  node(port: number): RedisProcess;
  stop(): Promise<void>;
}

const count = (reply: unknown): number => (Array.isArray(reply) ? reply.length : 0);

export async function startRedisTopology(options: TopologyOptions): Promise<RedisTopology | Skip> {
  const binary = redisServerBinary();
  if ('missing' in binary) return unavailable('the Sentinel suite', binary.missing);
  const masterName = options.masterName ?? 'gatehouse-test';
  const password = options.password ?? null;
  const sentinelPassword = options.sentinelPassword ?? null;
  const quorum = options.quorum ?? Math.floor(options.sentinels / 2) + 1;
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-redis-'));
  const started: RedisProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((p) => p.kill()));
    await rm(dir, { recursive: true, force: true });
  };
  const auth = password === null ? [] : [`requirepass ${password}`, `masterauth ${password}`];
  const dataNode = ['repl-diskless-sync yes', 'repl-diskless-sync-delay 0', ...auth];
  try {
    const master = await startRedisProcess({ binary: binary.path, dir, role: 'master', password, config: () => dataNode });
    started.push(master);
    const replicas: RedisProcess[] = [];
    for (let i = 0; i < options.replicas; i += 1) {
      const replica = await startRedisProcess({ binary: binary.path, dir, role: `replica${i}`, password, config: () => [...dataNode, `replicaof 127.0.0.1 ${master.port}`] });
      started.push(replica);
      replicas.push(replica);
      await waitFor(() => withProbe(replica.port, password, async (c) => (await c.info('replication')).includes('master_link_status:up')), 10_000, 25);
    }
    const sentinels: RedisProcess[] = [];
    for (let i = 0; i < options.sentinels; i += 1) {
      const sentinel = await startRedisProcess({
        binary: binary.path,
        dir,
        role: `sentinel${i}`,
        sentinel: true,
        password: sentinelPassword,
        config: () => [
          ...(sentinelPassword === null ? [] : [`requirepass ${sentinelPassword}`]),
          `sentinel monitor ${masterName} 127.0.0.1 ${master.port} ${quorum}`,
          ...(password === null ? [] : [`sentinel auth-pass ${masterName} ${password}`]),
          `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 1_000}`,
          `sentinel failover-timeout ${masterName} 5000`,
          `sentinel parallel-syncs ${masterName} 1`,
        ],
      });
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    for (const sentinel of sentinels) {
      await waitFor(
        () =>
          withProbe(sentinel.port, sentinelPassword, async (c) => {
            const known = count(await c.call('SENTINEL', 'REPLICAS', masterName)) >= options.replicas;
            return known && count(await c.call('SENTINEL', 'SENTINELS', masterName)) >= options.sentinels - 1;
          }),
        15_000,
        50,
      );
    }
    const byPort = new Map(started.map((p) => [p.port, p]));
    return {
      masterName,
      master,
      replicas,
      sentinels,
      sentinelAddresses: sentinels.map((s) => s.address),
      password,
      sentinelPassword,
      async currentMasterPort() {
        for (const sentinel of sentinels) {
          try {
            const reply = await withProbe(sentinel.port, sentinelPassword, (c) => c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName));
            if (Array.isArray(reply) && reply.length === 2) return Number(reply[1]);
          } catch {
            // this sentinel is down: ask the next one
          }
        }
        throw new Error(`no sentinel knows the master ${masterName}`);
      },
      node(port) {
        const node = byPort.get(port);
        if (node === undefined) throw new Error(`no test redis process on port ${port}`);
        return node;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
