/**
 * createRedisClient through Redis Sentinel, on test processes (redis-server and
 * `redis-server --sentinel` on free loopback ports, with passwords on the data nodes and the
 * sentinels): connecting to the master, a wrong master name, a wrong password, a forced
 * failover (SENTINEL FAILOVER) and a crashed master (SIGKILL). Skipped with the reason
 * without redis-server, except under CI=true.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { RedisSessionStore } from '../../core/mcp/aggregate/redis-session-store.ts';
import type { RedisConnectionConfig } from '../../core/config/redis-config.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { createRedisClient, waitReady } from '../../core/store/redis.ts';
import { waitFor } from '../fixtures/processes.ts';
import { captureLog } from './helpers/log.ts';
import { withProbe } from './helpers/redis-process.ts';
import { skipIf, type Skip } from './helpers/service.ts';
import { sessionRecord } from './helpers/session.ts';
import { startRedisTopology, type RedisTopology } from './helpers/topology.ts';

const PASSWORD = 'data-node-secret-5a1f';
const SENTINEL_PASSWORD = 'sentinel-secret-9c2e';
const secret = (value: string) => ({ name: 'redis', key: 'password', value });
/** Bound on the client's recovery after a failover started. */
const RECOVERY_MS = 15_000;

const sentinelConfig = (topology: RedisTopology, masterName = topology.masterName): RedisConnectionConfig => ({
  sentinel: { masterName, addresses: topology.sentinelAddresses, password: secret(SENTINEL_PASSWORD) },
  address: null,
  username: null,
  password: secret(PASSWORD),
  db: 0,
  keyPrefix: 'gatehouse-test:',
});

/** The port of the server a client is connected to. */
const serverPort = async (client: Redis): Promise<number> => Number(/tcp_port:(\d+)/.exec(await client.info('server'))?.[1]);

/** One topology per describe block: started in `before`, stopped in `after` even when a test failed. */
function withTopology(sentinels: number): { get: () => RedisTopology; skip: () => Skip | null } {
  let topology: RedisTopology | null = null;
  let skip: Skip | null = null;
  before(async () => {
    const started = await startRedisTopology({ replicas: 1, sentinels, password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
    if ('skip' in started) skip = started;
    else topology = started;
  });
  after(async () => {
    await topology?.stop();
  });
  return {
    get: () => {
      if (topology === null) throw new Error('topology not started');
      return topology;
    },
    skip: () => skip,
  };
}

/** Waits until `client` writes and reads through `store` again, on the node sentinels call master. */
async function recovered(client: Redis, store: RedisSessionStore, topology: RedisTopology, oldMaster: number): Promise<number> {
  const master = await waitFor(
    async () => {
      const master = await topology.currentMasterPort();
      if (master === oldMaster) return false;
      const probe = sessionRecord();
      await store.save(probe);
      assert.deepEqual(await store.touch(probe.id), probe);
      return (await serverPort(client)) === master ? { master } : false;
    },
    RECOVERY_MS,
    100,
  );
  return (master as { master: number }).master;
}

describe('redis through Sentinel', () => {
  const topo = withTopology(3);
  const clients: Redis[] = [];
  const captured = captureLog();
  after(() => clients.forEach((c) => c.disconnect()));
  const connect = (config: RedisConnectionConfig, name: string): Redis => {
    const client = createRedisClient(config, captured.log, name);
    clients.push(client);
    return client;
  };

  it('connects to the master the sentinels name; writes reach the replica', async (t) => {
    if (skipIf(t, topo.skip())) return;
    const topology = topo.get();
    const client = connect(sentinelConfig(topology), 'via-sentinel');
    await waitReady(client, 5_000);
    assert.equal(await serverPort(client), topology.master.port);
    const store = new RedisSessionStore(client, { ttlMs: 60_000, keyPrefix: 'gatehouse-test:' });
    const record = sessionRecord();
    await store.save(record);
    assert.equal(await client.wait(1, 2_000), 1);
    const replicated = await withProbe(topology.replicas[0]!.port, PASSWORD, (c) => c.get(`gatehouse-test:vmcp:session:${record.id}`));
    assert.deepEqual(JSON.parse(replicated ?? 'null'), record);
  });

  it('a wrong master name fails waitReady with a message naming it', async (t) => {
    if (skipIf(t, topo.skip())) return;
    const client = connect(sentinelConfig(topo.get(), 'no-such-master'), 'wrong-master');
    await assert.rejects(waitReady(client, 1_500), (err: Error) => {
      assert.match(err.message, /^Redis master "no-such-master" via sentinels 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+ is not ready after 1500ms/);
      assert.match(err.message, /the sentinels answer but know no master named "no-such-master" \(check the master name/);
      return true;
    });
  });

  it('a wrong password fails waitReady naming the address; no password reaches the log', async (t) => {
    if (skipIf(t, topo.skip())) return;
    const topology = topo.get();
    const plain = { ...sentinelConfig(topology), sentinel: null, address: topology.master.address };
    const wrong = connect({ ...plain, password: secret('wrong-password-77') }, 'wrong-password');
    await assert.rejects(waitReady(wrong, 1_500), (err: Error) => err.message.startsWith(`Redis ${topology.master.address} is not ready after 1500ms: WRONGPASS`));
    const right = connect(plain, 'plain-with-password');
    await waitReady(right, 5_000);
    assert.equal(await right.ping(), 'PONG');
    const text = captured.text();
    assert.ok(text.includes('WRONGPASS'), 'the refusal was logged');
    for (const leaked of [PASSWORD, SENTINEL_PASSWORD, 'wrong-password-77']) assert.ok(!text.includes(leaked), `${leaked} in the log`);
  });

  it('after SENTINEL FAILOVER the same client reads and writes on the new master', { timeout: 20_000 }, async (t) => {
    if (skipIf(t, topo.skip())) return;
    const topology = topo.get();
    const client = connect(sentinelConfig(topology), 'forced-failover');
    await waitReady(client, 5_000);
    const store = new RedisSessionStore(client, { ttlMs: 60_000, keyPrefix: 'gatehouse-test:' });
    const before = sessionRecord();
    await store.save(before);
    assert.equal(await client.wait(1, 2_000), 1);
    const oldMaster = await topology.currentMasterPort();
    const started = Date.now();
    // Retried while the sentinel has no promotable replica yet (NOGOODSLAVE) or is busy (INPROG).
    await waitFor(() => withProbe(topology.sentinels[0]!.port, SENTINEL_PASSWORD, (c) => c.call('SENTINEL', 'FAILOVER', topology.masterName)), 10_000, 200);
    const newMaster = await recovered(client, store, topology, oldMaster);
    assert.equal(newMaster, topology.replicas[0]!.port);
    // Sentinel demotes the old master (and drops its clients) only ~10 s after the switch: a
    // quicker move means the client followed +switch-master instead of writing to a stale master.
    assert.ok(Date.now() - started < 8_000, `moved after ${Date.now() - started}ms`);
    assert.ok(captured.lines().some((line) => line.msg === 'sentinel switched the master' && line.connection === 'forced-failover'));
    assert.deepEqual(await store.touch(before.id), before, 'what was saved before the failover is still there');
    const fresh = connect(sentinelConfig(topology), 'after-failover');
    await waitReady(fresh, 5_000);
    assert.equal(await serverPort(fresh), newMaster);
  });
});

describe('redis through Sentinel when the master crashes', () => {
  const topo = withTopology(3);
  const clients: Redis[] = [];
  after(() => clients.forEach((c) => c.disconnect()));

  it('after the master is killed the same client reads and writes on the promoted replica', { timeout: 20_000 }, async (t) => {
    if (skipIf(t, topo.skip())) return;
    const topology = topo.get();
    const captured = captureLog();
    const client = createRedisClient(sentinelConfig(topology), captured.log, 'crash');
    clients.push(client);
    await waitReady(client, 5_000);
    const store = new RedisSessionStore(client, { ttlMs: 60_000, keyPrefix: 'gatehouse-test:' });
    const record = sessionRecord();
    await store.save(record);
    assert.equal(await client.wait(1, 2_000), 1);
    await topology.master.kill();
    const newMaster = await recovered(client, store, topology, topology.master.port);
    assert.equal(newMaster, topology.replicas[0]!.port);
    assert.deepEqual(await store.touch(record.id), record);
    const messages = captured.lines().map((line) => line.msg);
    assert.ok(messages.includes('redis connection lost; reconnecting') && messages.includes('redis reconnected'), messages.join(', '));
    // Logged once per kind and state, not once per reconnect attempt.
    assert.ok(messages.filter((m) => m === 'redis error' || m === 'redis sentinel error').length <= 10, messages.join(', '));
    // And /metrics tells the outage: the connection is up again, after errors and a reconnect.
    const text = await new GatewayMetrics({ processMetrics: false }).registry.metrics();
    const value = (name: string): number => Number(new RegExp(`^${name}\\{connection="crash"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? -1);
    assert.equal(value('gatehouse_redis_up'), 1, text);
    assert.ok(value('gatehouse_redis_errors_total') >= 1, text);
    assert.ok(value('gatehouse_redis_reconnects_total') >= 1, text);
  });
});
