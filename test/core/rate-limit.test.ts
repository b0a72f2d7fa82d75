/**
 * Request budgets (core/base/rate-limit.ts): a key's own budget, the shared one, which is spent
 * first, the bound on keys kept in memory, and on Redis one budget for every replica (two
 * budgets on one Redis stand for two gateway processes), kept per process when Redis is gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { RequestBudget, type BudgetBounds } from '../../core/base/rate-limit.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';

const MINUTE = 60_000;
const bounds = (perKey: number, shared: number): BudgetBounds => ({ perKey: { maxTokens: perKey, refillPeriodMs: MINUTE }, shared: { maxTokens: shared, refillPeriodMs: MINUTE } });

async function takeMany(budget: RequestBudget, key: string, n: number): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < n; i++) if ((await budget.take(key)) === null) allowed++;
  return allowed;
}

describe('request budgets in memory', () => {
  it('allows a key its own budget, then refuses it with the window left, without spending the shared one', async () => {
    const budget = new RequestBudget('t', bounds(3, 8), { type: 'memory' });
    assert.equal(await takeMany(budget, 'a', 10), 3);
    const refusal = await budget.take('a');
    assert.equal(refusal?.scope, 'perKey');
    assert.equal(refusal?.bound.maxTokens, 3);
    assert.ok(refusal!.retryAfterSeconds >= 1 && refusal!.retryAfterSeconds <= 60, String(refusal?.retryAfterSeconds));
    // a's eight refused requests spent nothing of the shared 8: b gets its 3, c the 2 left.
    assert.equal(await takeMany(budget, 'b', 3), 3);
    assert.equal(await takeMany(budget, 'c', 3), 2);
  });

  it('refuses every key once the shared budget is spent, naming it', async () => {
    const budget = new RequestBudget('t', bounds(10, 4), { type: 'memory' });
    assert.equal(await takeMany(budget, 'a', 2), 2);
    assert.equal(await takeMany(budget, 'b', 2), 2);
    const refusal = await budget.take('c');
    assert.equal(refusal?.scope, 'shared');
    assert.equal(refusal?.bound.maxTokens, 4);
  });

  it('keeps at most maxKeys keys: a flood of new keys costs a bounded store, the oldest start again', async () => {
    const budget = new RequestBudget('t', bounds(1, 1_000_000), { type: 'memory' }, 100);
    assert.equal(await takeMany(budget, 'first', 2), 1);
    for (let i = 0; i < 100; i++) await budget.take(`flood-${i}`);
    assert.equal(await budget.take('first'), null, 'its record was dropped for the newer keys');
  });
});

describe('request budgets on Redis', () => {
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
  const client = (address = (redis as LocalRedis).config.address!): Redis => {
    const [host, port] = address.split(':');
    const made = new Redis({ host: host!, port: Number(port), lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    made.on('error', () => undefined);
    clients.push(made);
    return made;
  };

  it('is one budget for every process on the same Redis: per key and shared', async (t) => {
    if (skipIf(t, skip())) return;
    const { keyPrefix } = redis as LocalRedis;
    const [one, two] = [client(), client()];
    await Promise.all([one, two].map((c) => new Promise((resolve) => (c.status === 'ready' ? resolve(null) : c.once('ready', resolve)))));
    const replicaA = new RequestBudget('shared-test', bounds(4, 6), { type: 'redis', client: one, keyPrefix });
    const replicaB = new RequestBudget('shared-test', bounds(4, 6), { type: 'redis', client: two, keyPrefix });
    assert.equal((await takeMany(replicaA, '10.0.0.1', 2)) + (await takeMany(replicaB, '10.0.0.1', 5)), 4, 'one address: 4 across both');
    assert.equal(await takeMany(replicaB, '10.0.0.2', 4), 2, 'the shared 6 across both');
    assert.equal((await replicaA.take('10.0.0.3'))?.scope, 'shared');
    const keys = await (redis as LocalRedis).admin.keys(`${keyPrefix}ratelimit:shared-test:*`);
    assert.ok(keys.length >= 3 && keys.every((key) => (key.includes(':key:') || key.endsWith(':shared:all'))), keys.join(' '));
  });

  // Bounded: without the timeout each answer would wait for the silent client for ever.
  it('with Redis connected but silent, a budget answers within its timeout from this process\'s count', { timeout: 10_000 }, async () => {
    // A client that is ready but whose commands never come back (Redis paused, a failover under way).
    const silent = { status: 'ready', defineCommand: () => undefined, rlflxIncr: () => new Promise(() => undefined) } as unknown as Redis;
    const budget = new RequestBudget('silent', bounds(2, 100), { type: 'redis', client: silent, keyPrefix: 'x:' });
    assert.equal(await takeMany(budget, 'a', 3), 2);
  });

  it('with Redis unreachable, each process keeps the budget itself: neither open nor closed', async () => {
    const unreachable = client('127.0.0.1:1');
    const budget = new RequestBudget('down', bounds(3, 100), { type: 'redis', client: unreachable, keyPrefix: 'x:' });
    assert.equal(await takeMany(budget, 'a', 10), 3);
    assert.equal((await budget.take('a'))?.scope, 'perKey');
  });
});
