/**
 * A full token verification through the validator next to raw jose `jwtVerify`, in CPU time.
 *
 * WebCrypto verifies on libuv's thread pool, so a wall-clock loop mostly measures the hop to the
 * pool and back (tinybench's figures for these tasks swing by ±40 %). This measures
 * `process.cpuUsage()` (all threads) instead, in pairs of blocks of 500 calls, the order within a
 * pair alternating, so that drift on a shared machine and whatever one block leaves to the next
 * (GC debt) fall on both sides alike. It reports the totals and the median of the pairs' ratios,
 * which a noisy neighbour moves least. The validator's token cache holds one entry and two tokens
 * alternate, so every call is a miss: signature, claims, and caching the result.
 *
 * Run by `npm run bench` after the micro benchmarks; results in results/verify-cpu.json.
 */
import type { BenchAlg } from './issuer.ts';
import { startVerifySetup } from './verify-setup.ts';

const BLOCK = 500;

export interface VerifyCpuResult {
  alg: BenchAlg;
  calls: number;
  joseMicros: number;
  validatorMicros: number;
  /** Of the totals. */
  ratio: number;
  /** The median of the per-pair ratios. */
  medianPairRatio: number;
  pairs: number;
}

async function measure(alg: BenchAlg, calls: number): Promise<VerifyCpuResult> {
  const setup = await startVerifySetup(alg);
  const { tokens, viaJose, viaValidator } = setup;
  try {
    const block = async (verify: (token: string) => unknown): Promise<number> => {
      const start = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await verify(tokens[i & 1]!);
      const used = process.cpuUsage(start);
      return used.user + used.system;
    };
    let jose = 0;
    let ours = 0;
    const ratios: number[] = [];
    for (let pair = 0; pair * BLOCK < calls; pair++) {
      let a: number;
      let b: number;
      if (pair % 2 === 0) {
        a = await block(viaJose);
        b = await block(viaValidator);
      } else {
        b = await block(viaValidator);
        a = await block(viaJose);
      }
      jose += a;
      ours += b;
      ratios.push(b / a);
    }
    ratios.sort((x, y) => x - y);
    const n = ratios.length * BLOCK;
    const medianPairRatio = ratios.length % 2 === 1 ? ratios[ratios.length >> 1]! : (ratios[ratios.length / 2 - 1]! + ratios[ratios.length / 2]!) / 2;
    return { alg, calls: n, joseMicros: jose / n, validatorMicros: ours / n, ratio: ours / jose, medianPairRatio, pairs: ratios.length };
  } finally {
    setup.close();
  }
}

export async function runVerifyCpu(calls = Number(process.env['BENCH_VERIFY_CALLS'] ?? 20_000)): Promise<VerifyCpuResult[]> {
  const results = [await measure('ES256', calls), await measure('RS256', calls)];
  console.log('\n### plugins/verify-cpu.ts (CPU per verification, interleaved blocks)\n');
  console.log('| alg | raw jose µs | validator µs | ratio of totals | median ratio of pairs |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of results) {
    console.log(`| ${r.alg} | ${r.joseMicros.toFixed(1)} | ${r.validatorMicros.toFixed(1)} | ${r.ratio.toFixed(3)}× | ${r.medianPairRatio.toFixed(3)}× (${r.pairs} pairs) |`);
  }
  return results;
}
