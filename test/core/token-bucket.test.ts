/**
 * Token buckets in memory (core/base/token-bucket.ts), on an injected clock: the burst, the
 * refill rate and the wait a refusal names, all-or-nothing across a request's buckets, the cap at
 * maxTokens, and the bound on keys kept.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryBuckets, TokenBuckets, type BucketLimit } from '../../core/base/token-bucket.ts';

const perMinute = (maxTokens: number): BucketLimit => ({ maxTokens, refillPeriodMs: 60_000 });

function clock(): { now: () => number; advance(ms: number): void } {
  let t = 1_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('token buckets in memory', () => {
  it('gives the burst, then one token per refillPeriod/maxTokens, naming the wait', () => {
    const time = clock();
    const buckets = new MemoryBuckets(100, time.now);
    const limit = [perMinute(6)];
    for (let i = 0; i < 6; i++) assert.equal(buckets.take(['a'], limit), null, `token ${i}`);
    assert.deepEqual(buckets.take(['a'], limit), { index: 0, retryAfterMs: 10_000 });
    time.advance(4_000);
    assert.deepEqual(buckets.take(['a'], limit), { index: 0, retryAfterMs: 6_000 }, 'the refused take spent nothing');
    time.advance(6_000);
    assert.equal(buckets.take(['a'], limit), null, 'one token refilled');
    assert.equal(buckets.take(['a'], limit)?.index, 0);
    assert.equal(buckets.take(['b'], limit), null, 'another key has its own bucket');
  });

  it('refills up to maxTokens only, however long the key was idle', () => {
    const time = clock();
    const buckets = new MemoryBuckets(100, time.now);
    const limit = [perMinute(3)];
    buckets.take(['a'], limit);
    time.advance(3_600_000);
    let taken = 0;
    while (buckets.take(['a'], limit) === null) taken++;
    assert.equal(taken, 3);
  });

  it('takes from every bucket of a request or from none', () => {
    const time = clock();
    const buckets = new MemoryBuckets(100, time.now);
    const limits = [perMinute(10), perMinute(2)];
    assert.equal(buckets.take(['user', 'tool'], limits), null);
    assert.equal(buckets.take(['user', 'tool'], limits), null);
    assert.deepEqual(buckets.take(['user', 'tool'], limits), { index: 1, retryAfterMs: 30_000 });
    assert.deepEqual(buckets.take(['user', 'tool'], limits)?.index, 1);
    // The user's bucket lost nothing to the refused takes: 8 tokens left of 10.
    let taken = 0;
    while (buckets.take(['user'], [perMinute(10)]) === null) taken++;
    assert.equal(taken, 8);
  });

  it('keeps at most maxKeys keys: a flood of identities costs a bounded store', () => {
    const buckets = new MemoryBuckets(100, clock().now);
    for (let i = 0; i < 10_000; i++) buckets.take([`flood-${i}`], [perMinute(1)]);
    assert.equal(buckets.size, 100);
  });

  it('without Redis, TokenBuckets answers synchronously from memory', () => {
    const buckets = new TokenBuckets(null, { maxKeys: 10 });
    assert.equal(buckets.shared, false);
    assert.equal(buckets.take(['a'], [perMinute(1)]), null);
    const refused = buckets.take(['a'], [perMinute(1)]);
    assert.ok(refused !== null && !(refused instanceof Promise) && refused.retryAfterMs > 0 && refused.retryAfterMs <= 60_000);
  });
});
