/**
 * `npm run bench` — the micro benchmarks, the load benchmark, the aggregation benchmark, the
 * protocol generations benchmark, the per-user tool policy benchmark and the transports benchmark.
 *
 *   npm run bench                      all six
 *   npm run bench -- --micro-only      only the micro benchmarks
 *   npm run bench -- --load-only       only the load benchmark (bench/load/, see harness.ts)
 *   npm run bench -- --aggregate-only  only the aggregation benchmark (bench/aggregate/run.ts)
 *   npm run bench -- --eras-only       only the protocol generations benchmark (bench/aggregate/eras.ts)
 *   npm run bench -- --policy-only     only the per-user tool policy benchmark (bench/aggregate/policy.ts)
 *   npm run bench -- --stdio-only      only the transports benchmark: HTTP, stdio, legacy SSE (bench/aggregate/stdio.ts)
 *   npm run bench -- --walk-only       only the walk of one POST through the code (bench/walk.ts); not in the default run
 *   npm run bench -- --filter jsonrpc  only micro files whose path contains "jsonrpc"
 *   npm run bench -- --instructions-only
 *                                      full token verification vs raw jose in instructions
 *                                      (valgrind; plugins/verify-instructions.ts); not in the default run
 *   npm run bench -- --load-instructions-only
 *                                      the load rows in instructions per request (valgrind;
 *                                      load/instructions.ts; BENCH_ROWS selects); not in the default run
 *
 * Micro benchmark convention (tinybench):
 * - A file `bench/<area>/<name>.bench.ts`, mirroring the source it measures (core/protocol/jsonrpc.ts
 *   → bench/core/protocol/jsonrpc.bench.ts; plugins/x/y.ts → bench/plugins/x/y.bench.ts).
 * - Its default export registers tasks on the Bench it is given, sync or async:
 *
 *     import type { Bench } from 'tinybench';
 *     export default function register(bench: Bench): void {
 *       bench.add('verifyBearer, cache hit', () => { ... });
 *     }
 *
 * - Optional `export const options: BenchOptions` (tinybench) overrides the defaults of that
 *   file's Bench (time per task BENCH_MICRO_TIME ms, default 500; warm-up on).
 * - Setup happens in the module body or in `register`, never inside a task; keep results alive
 *   (e.g. assign them to an exported variable) so the work is not optimised away.
 * - Each file gets its own Bench, run sequentially in one process. Results are printed and
 *   written to bench/results/micro.json.
 *
 * Environment of the load benchmark: see bench/load/harness.ts (BENCH_DURATION, BENCH_WARMUP,
 * BENCH_CONNECTIONS, BENCH_ROWS, BENCH_STRICT, ...).
 *
 * BENCH_COMPARE=[label=]path (another checkout of this repository, `npm ci` run in it; see
 * bench/load/checkout.ts): the load, aggregation and protocol generations benchmarks also run
 * each gateway process they start from that checkout, interleaved with this checkout's, and
 * report this ÷ that; they write bench/results/compare-{load.json,load.md,aggregate.json,eras.json}
 * instead of their usual files. A run without a `--*-only` flag then leaves the micro benchmarks
 * out (they measure this checkout's code in this process: nothing to compare); `--micro-only`
 * still runs them, as a normal run. The variable is checked before anything runs.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Bench, type BenchOptions } from 'tinybench';
import { compareCheckoutOf, thisCheckoutOf } from './load/checkout.ts';
import { RESULTS_DIR, reportFails, runLoad } from './load/harness.ts';
import { runEras } from './aggregate/eras.ts';
import { runAggregate } from './aggregate/run.ts';
import { runPolicy } from './aggregate/policy.ts';
import { runStdio } from './aggregate/stdio.ts';
import { runVerifyInstructions, valgrindAvailable } from './plugins/verify-instructions.ts';
import { instructionsMarkdown, runLoadInstructions } from './load/instructions.ts';
import { runVerifyCpu } from './plugins/verify-cpu.ts';
import { runWalk } from './walk.ts';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));

interface MicroModule {
  default?: unknown;
  options?: unknown;
}

interface MicroResult {
  file: string;
  task: string;
  opsPerSecond: number | null;
  meanNs: number | null;
  p99Ns: number | null;
  rmePercent: number | null;
  samples: number | null;
  error: string | null;
}

export function findBenchFiles(dir = BENCH_DIR): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.bench.ts') && !f.split('/').includes('node_modules'))
    .map((f) => join(dir, f))
    .sort();
}

function fmt(n: number | null, digits = 0): string {
  return n === null || !Number.isFinite(n) ? '—' : n.toLocaleString('en-US', { maximumFractionDigits: digits });
}

async function runMicro(filter: string | undefined): Promise<boolean> {
  const files = findBenchFiles().filter((f) => filter === undefined || f.includes(filter));
  const results: MicroResult[] = [];
  let ok = true;
  const time = Number(process.env['BENCH_MICRO_TIME'] ?? 500);
  for (const file of files) {
    const rel = relative(BENCH_DIR, file);
    const mod = (await import(pathToFileURL(file).href)) as MicroModule;
    if (typeof mod.default !== 'function') {
      console.error(`${rel}: no default export function (bench: Bench) => void; skipped`);
      ok = false;
      continue;
    }
    const options = typeof mod.options === 'object' && mod.options !== null ? (mod.options as BenchOptions) : {};
    const bench = new Bench({ name: rel, time, ...options });
    await (mod.default as (bench: Bench) => unknown)(bench);
    await bench.run();
    const rows: MicroResult[] = bench.tasks.map((task) => {
      const r = task.result;
      if (r.state === 'completed' || r.state === 'aborted-with-statistics') {
        return {
          file: rel,
          task: task.name,
          opsPerSecond: r.throughput.mean,
          meanNs: r.latency.mean * 1e6,
          p99Ns: r.latency.p99 * 1e6,
          rmePercent: r.latency.rme,
          samples: r.latency.samplesCount,
          error: null,
        };
      }
      ok = false;
      const error = r.state === 'errored' ? r.error.message : r.state;
      return { file: rel, task: task.name, opsPerSecond: null, meanNs: null, p99Ns: null, rmePercent: null, samples: null, error };
    });
    results.push(...rows);
    console.log(`\n### ${rel}\n`);
    console.log('| task | ops/s | mean ns | p99 ns | ±% | samples |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const r of rows) {
      console.log(
        r.error !== null
          ? `| ${r.task} | error: ${r.error} | | | | |`
          : `| ${r.task} | ${fmt(r.opsPerSecond)} | ${fmt(r.meanNs, 1)} | ${fmt(r.p99Ns, 1)} | ${fmt(r.rmePercent, 2)} | ${fmt(r.samples)} |`,
      );
    }
  }
  if (files.length === 0) console.log('no micro benchmarks matched');
  mkdirSync(RESULTS_DIR, { recursive: true });
  if (filter === undefined || 'plugins/verify-cpu.ts'.includes(filter)) {
    const verifyCpu = await runVerifyCpu();
    writeFileSync(join(RESULTS_DIR, 'verify-cpu.json'), `${JSON.stringify({ node: process.version, date: new Date().toISOString(), results: verifyCpu }, null, 2)}\n`);
  }
  // A filtered run replaces only its own files' results; the other files' last results stay.
  if (results.length > 0) {
    const path = join(RESULTS_DIR, 'micro.json');
    const ran = new Set(results.map((r) => r.file));
    const kept = filter === undefined || !existsSync(path) ? [] : (JSON.parse(readFileSync(path, 'utf8')) as { results: MicroResult[] }).results.filter((r) => !ran.has(r.file));
    writeFileSync(path, `${JSON.stringify({ node: process.version, date: new Date().toISOString(), results: [...kept, ...results] }, null, 2)}\n`);
  }
  return ok;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      'load-only': { type: 'boolean', default: false },
      'micro-only': { type: 'boolean', default: false },
      'aggregate-only': { type: 'boolean', default: false },
      'eras-only': { type: 'boolean', default: false },
      'policy-only': { type: 'boolean', default: false },
      'stdio-only': { type: 'boolean', default: false },
      'instructions-only': { type: 'boolean', default: false },
      'load-instructions-only': { type: 'boolean', default: false },
      'walk-only': { type: 'boolean', default: false },
      filter: { type: 'string' },
    },
  });
  const only = (['micro-only', 'load-only', 'aggregate-only', 'eras-only', 'policy-only', 'stdio-only', 'instructions-only', 'load-instructions-only', 'walk-only'] as const).filter((flag) => values[flag]);
  if (only.length > 1) {
    console.error(`--${only.join(' and --')} exclude each other`);
    return 2;
  }
  let compared: ReturnType<typeof compareCheckoutOf>;
  try {
    compared = compareCheckoutOf();
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  if (compared !== null) {
    const comparedParts = only.length === 0 || ['load-only', 'aggregate-only', 'eras-only'].includes(only[0]!);
    console.error(
      comparedParts
        ? `BENCH_COMPARE: this checkout (${thisCheckoutOf().label}) against ${compared.label} (${compared.root})` +
            (only.length === 0 ? '; the micro benchmarks are left out (nothing of theirs is compared: --micro-only runs them)' : '')
        : `BENCH_COMPARE: not used by --${only[0]} (this checkout only, written as a normal run)`,
    );
  }
  if ((only[0] === 'instructions-only' || only[0] === 'load-instructions-only') && !valgrindAvailable()) {
    console.error(`--${only[0]} needs valgrind (callgrind and callgrind_control): apt-get install -y valgrind`);
    return 2;
  }
  if (only[0] === 'instructions-only') {
    const results = await runVerifyInstructions();
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(join(RESULTS_DIR, 'verify-instructions.json'), `${JSON.stringify({ node: process.version, date: new Date().toISOString(), results }, null, 2)}\n`);
    return 0;
  }
  if (only[0] === 'load-instructions-only') {
    const report = await runLoadInstructions();
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(join(RESULTS_DIR, 'load-instructions.json'), `${JSON.stringify(report, null, 2)}\n`);
    const markdown = instructionsMarkdown(report);
    writeFileSync(join(RESULTS_DIR, 'load-instructions.md'), markdown);
    console.log(markdown);
    return report.rows.some((row) => row.status === 'failed') ? 1 : 0;
  }
  if (only[0] === 'walk-only') return (await runWalk()) ? 0 : 1;
  // The policy and transports benchmarks compare rows of this checkout with each other: not part of a BENCH_COMPARE run.
  const run = (part: 'micro' | 'load' | 'aggregate' | 'eras' | 'policy' | 'stdio'): boolean =>
    only.length === 0 ? !((part === 'micro' || part === 'policy' || part === 'stdio') && compared !== null) : only[0] === `${part}-only`;
  let failed = false;
  if (run('micro')) {
    console.log('## Micro benchmarks');
    failed = !(await runMicro(values.filter)) || failed;
  }
  if (run('load')) failed = reportFails(await runLoad()) || failed;
  if (run('aggregate')) await runAggregate();
  if (run('eras')) await runEras();
  if (run('policy')) await runPolicy();
  if (run('stdio')) await runStdio();
  return failed ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exitCode = 1;
  },
);
