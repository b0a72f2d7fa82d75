/**
 * A token bucket take in memory (core/base/token-bucket.ts), next to what the same check costs on
 * rate-limiter-flexible's fixed window (core/base/rate-limit.ts `RequestBudget`, per key only: its
 * shared budget set out of reach), among 1,000 keys: the figures behind choosing buckets of our own.
 * And one take of three buckets (a user's, a tool's shared and per-user ones), all or nothing.
 */
import type { Bench } from 'tinybench';
import { MemoryBuckets, type BucketLimit } from '../../../core/base/token-bucket.ts';
import { RequestBudget } from '../../../core/base/rate-limit.ts';

const HUGE = 1_000_000_000;
const limit: BucketLimit = { maxTokens: HUGE, refillPeriodMs: 60_000 };
const buckets = new MemoryBuckets();
const budget = new RequestBudget('bench', { perKey: limit, shared: { maxTokens: HUGE, refillPeriodMs: 60_000 } }, { type: 'memory' });
const keys = Array.from({ length: 1_000 }, (_, i) => [`u:p23:https://idp.example.comuser-${i}`]);
const two = keys.map((key) => [key[0]!, 's']);
const three = keys.map((key) => [key[0]!, 'ts6:deploy', `tu6:deploy${key[0]!}`]);
const ONE = [limit];
const TWO = [limit, limit];
const THREE = [limit, limit, limit];

export let outcome: unknown = null;
let i = 0;

export default function register(bench: Bench): void {
  bench
    .add('token bucket: take, one bucket (memory, 1,000 keys)', () => {
      outcome = buckets.take(keys[i++ % 1_000]!, ONE);
    })
    .add('token bucket: take, a user\'s bucket and the shared one (memory)', () => {
      outcome = buckets.take(two[i++ % 1_000]!, TWO);
    })
    .add('token bucket: take, three buckets all or nothing (memory)', () => {
      outcome = buckets.take(three[i++ % 1_000]!, THREE);
    })
    .add('fixed window (rate-limiter-flexible, RequestBudget): take, one key + its shared budget (memory)', async () => {
      outcome = await budget.take(keys[i++ % 1_000]![0]!);
    });
}
