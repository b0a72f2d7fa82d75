/**
 * SessionStore.create, what keeps two replicas from both keeping an implicit session they opened
 * at once (implicit-race.test.ts): the first record stored wins, the second caller gets it back
 * and nothing of its own is written; an owned session still ends its owner's oldest past the
 * maximum, atomically. In memory and on the machine's Redis (skipped with a reason when it does
 * not answer, except under CI=true).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { MemorySessionStore } from '../../core/mcp/aggregate/memory-session-store.ts';
import { RedisSessionStore } from '../../core/mcp/aggregate/redis-session-store.ts';
import type { SessionStore } from '../../core/mcp/aggregate/session-store.ts';
import { createLogger } from '../../core/observe/log.ts';
import { createRedisClient, waitReady } from '../../core/store/redis.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';
import { sessionRecord } from '../store/helpers/session.ts';
import { skipIf, type Skip } from '../store/helpers/service.ts';

const alice = { issuer: 'https://a.example', subject: 'alice' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The checks, each on a fresh store holding at most two sessions per owner. */
const CHECKS: [string, (store: SessionStore) => Promise<void>][] = [
  [
    'the first record stored wins; the second caller gets it back, and nothing of its own is written',
    async (store) => {
      for (const owner of [null, alice]) {
        const id = `m.race-${owner === null ? 'anonymous' : 'alice'}`;
        const backend = (sessionId: string) => ({ l: { sessionId, protocolVersion: '2025-11-25', capabilities: {} } });
        const winner = sessionRecord(id, { owner, backends: backend('kept'), modern: true });
        const loser = sessionRecord(id, { owner, backends: backend('ended'), modern: true });
        const outcomes = await Promise.all([store.create(winner), store.create(loser)]);
        assert.equal(outcomes.filter((o) => o.created).length, 1, 'exactly one created it');
        const lost = outcomes.find((o) => !o.created)!;
        assert.ok(!lost.created);
        const stored = await store.touch(id, owner);
        assert.equal(stored?.backends['l']?.sessionId, lost.existing.backends['l']?.sessionId, 'the loser got what is stored');
        assert.deepEqual(await store.create(loser), { created: false, existing: stored }, 'and so does any later try');
      }
    },
  ],
  [
    'an owned session created past its owner\'s maximum ends the oldest, as save does',
    async (store) => {
      await store.save(sessionRecord('o-1', { owner: alice }));
      await sleep(2);
      await store.save(sessionRecord('o-2', { owner: alice }));
      await sleep(2);
      const outcome = await store.create(sessionRecord('m.o-3', { owner: alice, modern: true }));
      assert.ok(outcome.created);
      assert.deepEqual(outcome.ended.map((r) => r.id), ['o-1']);
      assert.equal(await store.touch('o-1', alice), null);
    },
  ],
];

describe('SessionStore.create in memory', () => {
  for (const [name, check] of CHECKS) it(name, () => check(new MemorySessionStore({ max: 100, maxPerOwner: 2, ttlMs: 60_000, sweepIntervalMs: 0 })));
});

describe('SessionStore.create on Redis', () => {
  let redis: LocalRedis | Skip;
  const clients: Redis[] = [];
  let n = 0;
  before(async () => {
    redis = await openLocalRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    if (!('skip' in redis)) await redis.cleanup();
  });

  for (const [name, check] of CHECKS) {
    it(name, async (t) => {
      if (skipIf(t, 'skip' in redis ? redis : null) || 'skip' in redis) return;
      const client = createRedisClient(redis.config, createLogger('silent'), `create-${n}`);
      clients.push(client);
      await waitReady(client, 5_000);
      // A prefix per check: each starts empty.
      await check(new RedisSessionStore(client, { ttlMs: 60_000, maxPerOwner: 2, keyPrefix: `${redis.keyPrefix}${n++}:` }));
    });
  }
});
