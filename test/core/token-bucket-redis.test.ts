/**
 * Token buckets on Redis (core/base/token-bucket.ts): two TokenBuckets on two connections stand
 * for two gateway processes and share each bucket; a key Redis refused is refused here without a
 * round trip until it holds a token, so a batch of thousands of calls asks Redis about as often as
 * its tokens allow; and a Redis that is silent or unreachable leaves each process counting in
 * memory (neither open nor closed), a silent one holding one take for its timeout, not each. Skipped with the reason without Redis
 * (a failure under CI=true), except the tests that need no running Redis.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { TokenBuckets, type BucketLimit, type BucketRefusal } from '../../core/base/token-bucket.ts';
import { RateLimits } from '../../core/mcp/rate-limits.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import type { Context } from '../../core/plugin-api/context.ts';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';

const perMinute = (maxTokens: number): BucketLimit => ({ maxTokens, refillPeriodMs: 60_000 });

async function takeMany(buckets: TokenBuckets, keys: string[], limits: BucketLimit[], n: number): Promise<number> {
  let taken = 0;
  for (let i = 0; i < n; i++) if ((await buckets.take(keys, limits)) === null) taken++;
  return taken;
}

/** Counts the take scripts sent on `client` from now on. */
function countTakes(client: Redis): () => number {
  const target = client as unknown as { gatehouseTakeTokens: (...args: unknown[]) => Promise<unknown> };
  const original = target.gatehouseTakeTokens;
  let count = 0;
  target.gatehouseTakeTokens = function (this: unknown, ...args: unknown[]) {
    count++;
    return original.apply(this, args);
  };
  return () => count;
}

describe('token buckets on Redis', () => {
  let redis: LocalRedis | Skip;
  const clients: Redis[] = [];
  before(async () => {
    redis = await openLocalRedis();
  });
  after(async () => {
    for (const client of clients) client.disconnect();
    if (!('skip' in redis)) await redis.cleanup();
  });
  const skip = (): Skip | null => ('skip' in redis ? redis : null);
  const client = async (address = (redis as LocalRedis).config.address!): Promise<Redis> => {
    const [host, port] = address.split(':');
    const made = new Redis({ host: host!, port: Number(port), maxRetriesPerRequest: 1, enableOfflineQueue: false });
    made.on('error', () => undefined);
    clients.push(made);
    if (address === (redis as LocalRedis).config.address) await new Promise((resolve) => (made.status === 'ready' ? resolve(null) : made.once('ready', resolve)));
    return made;
  };

  it('is one set of buckets for every process on the same Redis, all-or-nothing across a request\'s buckets', async (t) => {
    if (skipIf(t, skip())) return;
    const keyPrefix = `${(redis as LocalRedis).keyPrefix}ratelimit:t:`;
    const one = new TokenBuckets({ client: await client(), keyPrefix });
    const two = new TokenBuckets({ client: await client(), keyPrefix });
    assert.equal(one.shared, true);
    const limits = [perMinute(10), perMinute(4)];
    assert.equal((await takeMany(one, ['u:alice', 'tool'], limits, 3)) + (await takeMany(two, ['u:alice', 'tool'], limits, 3)), 4);
    const refusal = (await two.take(['u:bob', 'tool'], limits)) as BucketRefusal;
    assert.equal(refusal.index, 1);
    assert.ok(refusal.retryAfterMs > 0 && refusal.retryAfterMs <= 15_000, String(refusal.retryAfterMs));
    // alice's bucket lost nothing to the refused takes: 6 of 10 left, on either process.
    assert.equal(await takeMany(one, ['u:alice'], [perMinute(10)], 10), 6);
    const { admin } = redis as LocalRedis;
    const ttl = await admin.pttl(`${keyPrefix}u:alice`);
    assert.ok(ttl > 0 && ttl <= 60_000, `a bucket expires once it would be full again (${ttl} ms)`);
  });

  it('refuses a key Redis refused without asking Redis again until it holds a token', async (t) => {
    if (skipIf(t, skip())) return;
    const buckets = new TokenBuckets({ client: await client(), keyPrefix: `${(redis as LocalRedis).keyPrefix}ratelimit:blocked:` });
    assert.equal(await buckets.take(['k'], [perMinute(1)]), null);
    assert.ok((await buckets.take(['k'], [perMinute(1)])) !== null);
    const again = buckets.take(['k'], [perMinute(1)]);
    assert.ok(again !== null && !(again instanceof Promise), 'answered from this process, at once');
  });

  it('a batch of many calls asks Redis for no more takes than its tokens allow, plus the one refused', async (t) => {
    if (skipIf(t, skip())) return;
    const redisClient = await client();
    const buckets = new TokenBuckets({ client: redisClient, keyPrefix: `${(redis as LocalRedis).keyPrefix}ratelimit:batch:` });
    const asked = countTakes(redisClient);
    const limits = RateLimits.of({ shared: null, perUser: perMinute(3), perClient: null, tools: [], workloads: [] }, buckets, new GatewayMetrics({ processMetrics: false }))!;
    const ctx = { principal: null, clientAddress: '10.0.0.9' } as unknown as Context;
    const batch = Array.from({ length: 2000 }, (_, i): JsonRpcMessage => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo' } }));
    const outcomes = await limits.checkBatch(ctx, batch, 'solo');
    assert.equal(outcomes.filter((o) => o === null).length, 3);
    assert.ok(asked() <= 4, `one request's batch made ${asked()} Redis calls`);
  });

  it('with Redis connected but silent, a batch waits for one timeout, not one per call', { timeout: 10_000 }, async () => {
    let asked = 0;
    const silent = { status: 'ready', defineCommand: () => undefined, gatehouseTakeTokens: () => (asked++, new Promise(() => undefined)) } as unknown as Redis;
    const buckets = new TokenBuckets({ client: silent, keyPrefix: 'x:' }, { timeoutMs: 50 });
    const limits = RateLimits.of({ shared: null, perUser: perMinute(3), perClient: null, tools: [], workloads: [] }, buckets, new GatewayMetrics({ processMetrics: false }))!;
    const ctx = { principal: null, clientAddress: '10.0.0.9' } as unknown as Context;
    const batch = Array.from({ length: 50 }, (_, i): JsonRpcMessage => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo' } }));
    const outcomes = await limits.checkBatch(ctx, batch, 'solo');
    assert.equal(outcomes.filter((o) => o === null).length, 3, 'counted in this process meanwhile: neither open nor closed');
    assert.equal(asked, 1);
  });

  // Bounded: without the timeout each take would wait for the silent client for ever.
  it('with Redis connected but silent, a take answers within its timeout from this process\'s buckets', { timeout: 10_000 }, async () => {
    const silent = { status: 'ready', defineCommand: () => undefined, gatehouseTakeTokens: () => new Promise(() => undefined) } as unknown as Redis;
    const fallbacks: unknown[] = [];
    const buckets = new TokenBuckets({ client: silent, keyPrefix: 'x:' }, { timeoutMs: 50, onFallback: (err) => fallbacks.push(err) });
    assert.equal(await takeMany(buckets, ['a'], [perMinute(2)], 3), 2);
    assert.equal(fallbacks.length, 1, 'the takes after the first count here without asking the silent Redis (REDIS_BUCKET_RETRY_MS)');
  });

  it('with Redis unreachable, each process keeps the buckets itself: neither open nor closed', async () => {
    const buckets = new TokenBuckets({ client: await client('127.0.0.1:1'), keyPrefix: 'x:' });
    assert.equal(await takeMany(buckets, ['a'], [perMinute(3)], 10), 3);
  });
});
