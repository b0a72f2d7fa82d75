/**
 * createRedisClient / waitReady and RedisSessionStore against the machine's Redis
 * (127.0.0.1:6379): a random key prefix per run, its keys deleted at the end. Skipped with the
 * reason when Redis does not answer, except under CI=true.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { RedisSessionStore } from '../../core/mcp/aggregate/redis-session-store.ts';
import { recordSize } from '../../core/mcp/aggregate/session-store.ts';
import { createRedisClient, parseHostPort, redisOptions, waitReady } from '../../core/store/redis.ts';
import { freePort } from '../fixtures/processes.ts';
import { captureLog } from './helpers/log.ts';
import { openLocalRedis, type LocalRedis } from './helpers/local-redis.ts';
import { withProbe } from './helpers/redis-process.ts';
import { skipIf, unavailable, type Skip } from './helpers/service.ts';
import { sessionRecord, sleep } from './helpers/session.ts';

const plain = (address: string) => ({ sentinel: null, address, username: null, password: null, db: 0, keyPrefix: 'gatehouse:' });

describe('redis addresses and options', () => {
  it('parses host:port and [ipv6]:port, and refuses anything else with the expected form', () => {
    assert.deepEqual(parseHostPort('127.0.0.1:6379'), { host: '127.0.0.1', port: 6379 });
    assert.deepEqual(parseHostPort('redis-0.redis.svc:26379'), { host: 'redis-0.redis.svc', port: 26379 });
    assert.deepEqual(parseHostPort('[::1]:6380'), { host: '::1', port: 6380 });
    for (const bad of ['127.0.0.1', '::1:6379', 'host:0', 'host:70000', ':6379', 'redis://host:6379', '']) {
      assert.throws(() => parseHostPort(bad), /must be host:port \(for example 127\.0\.0\.1:6379 or \[::1\]:6379\)/, bad);
    }
  });

  it('maps a sentinel config to ioredis sentinel options with the secrets', () => {
    const secret = (value: string) => ({ name: 's', key: 'k', value });
    const options = redisOptions(
      { sentinel: { masterName: 'main', addresses: ['10.0.0.1:26379', '[::1]:26380'], password: secret('sp') }, address: null, username: secret('u'), password: secret('p'), db: 3, keyPrefix: 'x:' },
      'sessions',
    );
    assert.equal(options.name, 'main');
    assert.deepEqual(options.sentinels, [{ host: '10.0.0.1', port: 26379 }, { host: '::1', port: 26380 }]);
    assert.deepEqual([options.sentinelPassword, options.username, options.password, options.db], ['sp', 'u', 'p', 3]);
    assert.equal(options.connectionName, 'gatehouse:sessions');
    assert.equal(options.keyPrefix, undefined, 'stores build full keys themselves');
    assert.throws(() => redisOptions(plain('nope'), 'x'), /Redis address "nope" must be host:port/);
  });

  it('waitReady names the address and the error when nothing listens there', async () => {
    const port = await freePort();
    const captured = captureLog();
    const client = createRedisClient(plain(`127.0.0.1:${port}`), captured.log, 'unreachable');
    try {
      await assert.rejects(waitReady(client, 1_200), (err: Error) => {
        assert.match(err.message, new RegExp(`^Redis 127\\.0\\.0\\.1:${port} is not ready after 1200ms: .*ECONNREFUSED`));
        return true;
      });
      // Several reconnect attempts happened in that time; the refusal was logged once.
      const errors = captured.lines().filter((line) => line.msg === 'redis error');
      assert.equal(errors.length, 1, captured.text());
    } finally {
      client.disconnect();
    }
  });
});

describe('redis client and RedisSessionStore on a real Redis', () => {
  let redis: LocalRedis;
  let skip: Skip | null = null;
  const clients: Redis[] = [];
  const captured = captureLog();
  const client = async (name: string): Promise<Redis> => {
    const created = createRedisClient(redis.config, captured.log, name);
    clients.push(created);
    await waitReady(created, 5_000);
    return created;
  };

  before(async () => {
    const opened = await openLocalRedis();
    if ('skip' in opened) skip = opened;
    else redis = opened;
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    if (skip === null) await redis.cleanup();
  });

  it('connects, names the connection, and logs that it is ready', async (t) => {
    if (skipIf(t, skip)) return;
    const c = await client('naming');
    assert.equal(await c.client('GETNAME'), 'gatehouse:naming');
    await waitReady(c, 10); // already ready: resolves at once
    assert.ok(captured.lines().some((line) => line.msg === 'redis ready' && line.connection === 'naming'));
  });

  it('connects to an IPv6 address ([::1]:port)', async (t) => {
    if (skipIf(t, skip)) return;
    const { port } = parseHostPort(redis.config.address ?? '');
    try {
      await withProbe(port, null, (c) => c.ping(), '::1');
    } catch (err) {
      // The same rule as for every service: skipped with the reason here, a failure under CI=true.
      return t.skip(unavailable('redis over IPv6', `Redis does not listen on [::1]:${port}: ${(err as Error).message}`).skip);
    }
    const c = createRedisClient({ ...redis.config, address: `[::1]:${port}` }, captured.log, 'ipv6');
    clients.push(c);
    await waitReady(c, 5_000);
    assert.equal(await c.ping(), 'PONG');
  });

  it('save / touch / delete round trip, with the TTL set on save', async (t) => {
    if (skipIf(t, skip)) return;
    const store = new RedisSessionStore(await client('round-trip'), { ttlMs: 60_000, keyPrefix: redis.keyPrefix });
    const record = sessionRecord();
    await store.save(record);
    const pttl = await redis.admin.pttl(`${redis.keyPrefix}vmcp:session:${record.id}`);
    assert.ok(pttl > 55_000 && pttl <= 60_000, `PTTL ${pttl}`);
    assert.deepEqual(await store.touch(record.id), record);
    await store.save({ ...record, missing: [] });
    assert.deepEqual((await store.touch(record.id))?.missing, []);
    await store.delete(record.id);
    assert.equal(await store.touch(record.id), null);
    await store.delete(record.id); // deleting an absent session is fine
  });

  it('holds at most maxPerOwner sessions per owner, atomically: the oldest go, other owners stay', async (t) => {
    if (skipIf(t, skip)) return;
    const store = new RedisSessionStore(await client('owners'), { ttlMs: 60_000, maxPerOwner: 2, keyPrefix: redis.keyPrefix });
    const alice = { issuer: 'https://a.example', subject: 'alice' };
    const bob = { issuer: 'https://a.example', subject: 'bob' };
    await store.save(sessionRecord('owner-b1', { owner: bob }));
    await store.save(sessionRecord('owner-a1', { owner: alice }));
    await sleep(2);
    await store.save(sessionRecord('owner-a2', { owner: alice }));
    await sleep(2);
    assert.deepEqual(await store.save(sessionRecord('owner-a2', { owner: alice, missing: [] })), [], 'replacing is not a new session');
    const removed = await store.save(sessionRecord('owner-a3', { owner: alice }));
    assert.deepEqual(removed.map((r) => r.id), ['owner-a1']);
    assert.equal(await store.touch('owner-a1'), null);
    assert.notEqual(await store.touch('owner-b1'), null, 'bob is untouched');
    // Concurrent initializes (several replicas) never leave more than the bound.
    await Promise.all(Array.from({ length: 6 }, (_, i) => store.save(sessionRecord(`owner-c${i}`, { owner: alice }))));
    assert.equal(await redis.admin.zcard(store.ownerIndexKey(alice)), 2);
    assert.ok(!(await redis.admin.keys(`${redis.keyPrefix}vmcp:owner:*`)).some((key) => key.includes('alice')), 'owners are not spelled out in key names');
  });

  it('holds at most maxBytesPerOwner bytes of an owner\'s stored records, atomically: the oldest go until they fit, never the new one', async (t) => {
    if (skipIf(t, skip)) return;
    const alice = { issuer: 'https://a.example', subject: 'alice-bytes' };
    const bob = { issuer: 'https://a.example', subject: 'bob-bytes' };
    const padded = (id: string, owner: typeof alice, bytes: number) => sessionRecord(id, { owner, clientCapabilities: { experimental: { pad: 'x'.repeat(bytes) } } });
    const size = recordSize(padded('bytes-a1', alice, 10_000));
    const store = new RedisSessionStore(await client('owner-bytes'), { ttlMs: 60_000, maxBytesPerOwner: 3 * size, keyPrefix: redis.keyPrefix });
    await store.save(padded('bytes-b1', bob, 10_000));
    for (const id of ['bytes-a1', 'bytes-a2', 'bytes-a3']) {
      assert.deepEqual(await store.save(padded(id, alice, 10_000)), []);
      await sleep(2);
    }
    assert.deepEqual((await store.save(padded('bytes-a4', alice, 10_000))).map((r) => r.id), ['bytes-a1']);
    await sleep(2);
    assert.deepEqual((await store.save(padded('bytes-a5', alice, 18_000))).map((r) => r.id), ['bytes-a2', 'bytes-a3']);
    await sleep(2);
    assert.deepEqual((await store.save(padded('bytes-a6', alice, 40_000))).map((r) => r.id), ['bytes-a4', 'bytes-a5'], 'larger than the budget: every older one ends');
    assert.notEqual(await store.touch('bytes-a6'), null, 'the new one stands');
    assert.notEqual(await store.touch('bytes-b1'), null, 'bob is untouched');
    // Concurrent initializes (several replicas) never leave more than the budget.
    await Promise.all(Array.from({ length: 8 }, (_, i) => store.save(padded(`bytes-c${i}`, alice, 10_000))));
    const ids = await redis.admin.zrange(store.ownerIndexKey(alice), '0', '-1');
    let stored = 0;
    for (const id of ids) stored += await redis.admin.strlen(store.key(id));
    assert.ok(stored <= 3 * size, `${stored} bytes of alice's sessions stored`);
    assert.equal(ids.length, 3);
  });

  it('keeps the owner index alive as long as the owner\'s sessions are used: no new room by waiting', async (t) => {
    if (skipIf(t, skip)) return;
    const ttlMs = 600;
    const store = new RedisSessionStore(await client('owner-ttl'), { ttlMs, maxPerOwner: 2, keyPrefix: redis.keyPrefix });
    const dave = { issuer: 'https://a.example', subject: 'dave' };
    await store.save(sessionRecord('ttl-a', { owner: dave }));
    await store.save(sessionRecord('ttl-b', { owner: dave }));
    for (let i = 0; i < 4; i++) {
      await sleep(ttlMs / 2);
      assert.notEqual(await store.touch('ttl-a', dave), null);
      assert.notEqual(await store.touch('ttl-b', dave), null);
    }
    // Two TTLs later the index is still there: two more sessions end the two old ones.
    const removed = await store.save(sessionRecord('ttl-c', { owner: dave }));
    assert.deepEqual(removed.map((r) => r.id), ['ttl-a']);
    assert.equal(await redis.admin.zcard(store.ownerIndexKey(dave)), 2);
  });

  it('never ends the session it is saving, whatever the scores already in the index say', async (t) => {
    if (skipIf(t, skip)) return;
    const store = new RedisSessionStore(await client('owner-clock'), { ttlMs: 60_000, maxPerOwner: 1, keyPrefix: redis.keyPrefix });
    const erin = { issuer: 'https://a.example', subject: 'erin' };
    await store.save(sessionRecord('clock-a', { owner: erin }));
    // As if another replica, its clock far ahead, had indexed it: the old session scores above now.
    await redis.admin.zadd(store.ownerIndexKey(erin), Date.now() + 3_600_000, 'clock-a');
    const removed = await store.save(sessionRecord('clock-b', { owner: erin }));
    assert.deepEqual(removed.map((r) => r.id), ['clock-a']);
    assert.notEqual(await store.touch('clock-b'), null, 'the new session stands');
  });

  it('unknown and malformed ids are absent; saving a malformed id is refused', async (t) => {
    if (skipIf(t, skip)) return;
    const store = new RedisSessionStore(await client('ids'), { ttlMs: 60_000, keyPrefix: redis.keyPrefix });
    assert.equal(await store.touch('never-saved'), null);
    assert.equal(await store.touch('has space'), null);
    assert.equal(await store.touch('x'.repeat(257)), null);
    await assert.rejects(store.save(sessionRecord('bad id')), /session id must be 1-256 visible ASCII characters/);
    assert.throws(() => new RedisSessionStore(redis.admin, { ttlMs: 0, keyPrefix: '' }), /ttlMs must be a positive whole number/);
  });

  it('touch slides the TTL: alive past the first expiry while touched, gone without', async (t) => {
    if (skipIf(t, skip)) return;
    const ttlMs = 1_000;
    const store = new RedisSessionStore(await client('sliding'), { ttlMs, keyPrefix: redis.keyPrefix });
    const record = sessionRecord();
    const key = `${redis.keyPrefix}vmcp:session:${record.id}`;
    await store.save(record);
    await sleep(600);
    assert.deepEqual(await store.touch(record.id), record);
    assert.ok((await redis.admin.pttl(key)) > 800, 'touch restarted the TTL');
    await sleep(600); // 1.2 s after save: past the TTL save gave it
    assert.deepEqual(await store.touch(record.id), record);
    await sleep(ttlMs + 300);
    assert.equal(await store.touch(record.id), null);
  });

  it('a second store on a second client sees what the first saved and deleted', async (t) => {
    if (skipIf(t, skip)) return;
    const first = new RedisSessionStore(await client('process-a'), { ttlMs: 60_000, keyPrefix: redis.keyPrefix });
    const second = new RedisSessionStore(await client('process-b'), { ttlMs: 60_000, keyPrefix: redis.keyPrefix });
    const record = sessionRecord();
    await first.save(record);
    assert.deepEqual(await second.touch(record.id), record);
    await second.delete(record.id);
    assert.equal(await first.touch(record.id), null);
    const other = new RedisSessionStore(redis.admin, { ttlMs: 60_000, keyPrefix: `${redis.keyPrefix}other:` });
    await first.save(record);
    assert.equal(await other.touch(record.id), null, 'another key prefix is another namespace');
  });

  it('a corrupt or foreign value is absent (logged, never thrown)', async (t) => {
    if (skipIf(t, skip)) return;
    const store = new RedisSessionStore(await client('corrupt'), { ttlMs: 60_000, keyPrefix: redis.keyPrefix, log: captured.log });
    const plant = async (id: string, value: string): Promise<void> => {
      await redis.admin.set(`${redis.keyPrefix}vmcp:session:${id}`, value);
    };
    const record = sessionRecord();
    await plant('not-json', '{"v":1,');
    await plant('wrong-shape', JSON.stringify({ ...sessionRecord('wrong-shape'), backends: { a: { sessionId: 7 } } }));
    await plant('future', JSON.stringify({ ...sessionRecord('future'), v: 3 }));
    const { owner: _owner, ...unowned } = sessionRecord('unowned');
    await plant('unowned', JSON.stringify({ ...unowned, v: 1 }));
    await plant('other-id', JSON.stringify(record));
    await plant('scalar', '42');
    for (const id of ['not-json', 'wrong-shape', 'future', 'unowned', 'other-id', 'scalar']) assert.equal(await store.touch(id), null, id);
    const reasons = captured
      .lines()
      .filter((line) => line.msg === 'ignoring a stored session that is not a valid session record')
      .map((line) => line.reason);
    assert.deepEqual(reasons, ['not JSON', 'backends.a.sessionId: Invalid input: expected string, received number', 'v: Invalid input: expected 2', 'v: Invalid input: expected 2', 'record of another session id', '(root): Invalid input: expected object, received number']);
  });

  it('close() leaves the caller-owned client open', async (t) => {
    if (skipIf(t, skip)) return;
    const c = await client('owned');
    await new RedisSessionStore(c, { ttlMs: 1_000, keyPrefix: redis.keyPrefix }).close();
    assert.equal(await c.ping(), 'PONG');
  });
});
