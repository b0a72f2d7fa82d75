/**
 * The rate-limit check of a `tools/call` (core/mcp/rate-limits.ts `RateLimits.check`), as the
 * pipeline makes it: in memory (ns) and on the Redis the machine runs (µs, a round trip and the
 * Lua script; left out, with the reason printed, when Redis does not answer). Next to them what a
 * request pays when the check has nothing to do: a method that is not counted, and a tool
 * without a limit when only tools are limited (both return null without allocating). With no
 * `rateLimiting` at all there is no check: the pipeline's limits are null.
 */
import type { Bench } from 'tinybench';
import { Redis } from 'ioredis';
import { TokenBuckets } from '../../../core/base/token-bucket.ts';
import type { RateLimitConfig } from '../../../core/config/rate-limiting.ts';
import { RateLimits } from '../../../core/mcp/rate-limits.ts';
import { GatewayMetrics } from '../../../core/observe/metrics.ts';
import { Principal, type Context } from '../../../core/plugin-api/context.ts';
import type { JsonRpcMessage } from '../../../core/protocol/jsonrpc.ts';

const HUGE = { maxTokens: 1_000_000_000, refillPeriodMs: 60_000 };
const metrics = new GatewayMetrics({ processMetrics: false });
const perUser: RateLimitConfig = { shared: null, perUser: HUGE, perClient: null, tools: [], workloads: [] };
const everything: RateLimitConfig = { shared: HUGE, perUser: HUGE, perClient: null, tools: [{ name: 'deploy', shared: HUGE, perUser: HUGE }], workloads: [] };
const toolsOnly: RateLimitConfig = { shared: null, perUser: null, perClient: null, tools: [{ name: 'deploy', shared: HUGE, perUser: null }], workloads: [] };

const memoryPerUser = RateLimits.of(perUser, new TokenBuckets(null), metrics)!;
const memoryEverything = RateLimits.of(everything, new TokenBuckets(null), metrics)!;
const memoryToolsOnly = RateLimits.of(toolsOnly, new TokenBuckets(null), metrics)!;

const contexts = Array.from({ length: 1_000 }, (_, i) => ({ principal: new Principal(`user-${i}`, {}, null, 'https://idp.example.com'), clientAddress: '10.0.0.1' }) as unknown as Context);
const call = (name: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } });
const search = call('search');
const deploy = call('deploy');
const list: JsonRpcMessage = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

export let outcome: unknown = null;
let i = 0;

async function redisLimits(): Promise<{ limits: RateLimits; client: Redis } | null> {
  const client = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    process.stdout.write(`# rate-limits bench: the Redis tasks are left out: Redis at 127.0.0.1:6379 does not answer (${(err as Error).message})\n`);
    client.disconnect();
    return null;
  }
  const buckets = new TokenBuckets({ client, keyPrefix: `gatehouse-bench:${process.pid}:ratelimit:` });
  return { limits: RateLimits.of(perUser, buckets, metrics)!, client };
}

export default async function register(bench: Bench): Promise<void> {
  bench
    .add('rate limits: tools/list (not counted)', () => {
      outcome = memoryEverything.check(contexts[i++ % 1_000]!, list, 'github');
    })
    .add('rate limits: tools/call of a tool without a limit, only tools limited', () => {
      outcome = memoryToolsOnly.check(contexts[i++ % 1_000]!, search, 'github');
    })
    .add('rate limits: tools/call, perUser (memory, 1,000 users)', () => {
      outcome = memoryPerUser.check(contexts[i++ % 1_000]!, search, 'github');
    })
    .add('rate limits: tools/call, shared + perUser + the tool\'s shared and perUser (memory)', () => {
      outcome = memoryEverything.check(contexts[i++ % 1_000]!, deploy, 'github');
    });
  const redis = await redisLimits();
  if (redis === null) return;
  bench.add('rate limits: tools/call, perUser (Redis on loopback, 1,000 users)', async () => {
    outcome = await redis.limits.check(contexts[i++ % 1_000]!, search, 'github');
  });
  bench.addEventListener('complete', () => {
    void (async () => {
      const keys = await redis.client.keys(`gatehouse-bench:${process.pid}:*`);
      if (keys.length > 0) await redis.client.del(...keys);
      redis.client.disconnect();
    })();
  });
}
