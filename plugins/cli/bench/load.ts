/**
 * The load generator of `gatehouse bench`: autocannon (from npm, in this process, which is
 * neither the gateway nor the backend, so its CPU is nobody's figure), replaying one request on
 * `connections` keep-alive connections for a while.
 *
 * Latencies are taken from autocannon's per-response event with their fractions of a
 * millisecond (its own histogram keeps whole milliseconds, too coarse for a gateway on
 * loopback) and sorted for the percentiles. Responses outside 2xx, socket errors and timeouts
 * are counted; the measured request was checked once before (client.ts `toolCall`).
 */
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import type { BenchRequest } from './client.ts';

export interface LoadResult {
  /** Responses received (any status). */
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  errors: { non2xx: number; socket: number; timeouts: number };
}

/** The `p`-th percentile (0-100) of sorted values, nearest rank. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export async function drive(req: BenchRequest, connections: number, seconds: number): Promise<LoadResult> {
  let latencies = new Float64Array(1 << 16);
  let n = 0;
  let non2xx = 0;
  const started = performance.now();
  let finish!: (outcome: { err: unknown; result: autocannon.Result }) => void;
  const done = new Promise<{ err: unknown; result: autocannon.Result }>((resolve) => (finish = resolve));
  const instance = autocannon(
    { url: req.url, method: 'POST', headers: { ...req.headers }, body: req.body, connections, duration: seconds, timeout: 10 },
    (err: unknown, result: autocannon.Result) => finish({ err, result }),
  );
  instance.on('response', (_client, status, _bytes, ms) => {
    if (n === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[n++] = ms;
    if (status < 200 || status >= 300) non2xx++;
  });
  const { err, result } = await done;
  if (err !== null && err !== undefined) throw err instanceof Error ? err : new Error(String(err));
  const wall = (performance.now() - started) / 1000;
  const sorted = latencies.subarray(0, n).sort();
  let total = 0;
  for (const ms of sorted) total += ms;
  return {
    requests: n,
    seconds: wall,
    requestsPerSecond: n / wall,
    latencyMs: { mean: n > 0 ? total / n : Number.NaN, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: n > 0 ? sorted[n - 1]! : Number.NaN },
    // autocannon counts timeouts among its errors.
    errors: { non2xx, socket: Math.max(0, result.errors - result.timeouts), timeouts: result.timeouts },
  };
}
