/**
 * A full token verification through the validator next to raw jose `jwtVerify`, counted in
 * instructions (valgrind's callgrind), which, unlike CPU time on a shared machine, repeat to
 * within ~0.5 %. `npm run bench -- --instructions` (needs `apt-get install valgrind`; ~4 min).
 *
 * For each algorithm and side, a child process runs under callgrind: it warms up (3,000 calls,
 * so that the optimising compiler has settled), the counters are zeroed from outside
 * (`callgrind_control -z`), it makes N more calls, and the counters are dumped
 * (`callgrind_control -d`). Instructions per call = the dump's total / N: every thread (the
 * thread pool's signature checks, GC helpers), no startup. Both sides verify with the same key.
 * Results: results/verify-instructions.json.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchAlg } from './issuer.ts';
import { newKeyPair, startVerifySetup } from './verify-setup.ts';

const CHILD = 'GATEHOUSE_VERIFY_INSTRUCTIONS_CHILD';
const WARM_CALLS = 3_000;
const CALLS: Record<BenchAlg, number> = { ES256: 3_000, RS256: 6_000 };

export interface VerifyInstructionsResult {
  alg: BenchAlg;
  calls: number;
  joseInstructions: number;
  validatorInstructions: number;
  ratio: number;
}

/** The child: warm up, signal, wait, measure N calls, signal, wait for the dump. */
async function child(): Promise<void> {
  const { alg, side, calls, dir } = JSON.parse(process.env[CHILD]!) as { alg: BenchAlg; side: 'jose' | 'validator'; calls: number; dir: string };
  const setup = await startVerifySetup(alg, JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8')));
  const verify = side === 'jose' ? setup.viaJose : setup.viaValidator;
  const run = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await verify(setup.tokens[i & 1]!);
  };
  const signalAndWait = async (mine: string, theirs: string): Promise<void> => {
    writeFileSync(join(dir, `${side}.${mine}`), '');
    while (!existsSync(join(dir, `${side}.${theirs}`))) await sleep(20);
  };
  await run(WARM_CALLS);
  await signalAndWait('warm', 'go');
  await run(calls);
  await signalAndWait('done', 'dumped');
  setup.close();
}

/** Runs one side under callgrind and returns its instructions per call. */
async function countSide(alg: BenchAlg, side: 'jose' | 'validator', calls: number, dir: string): Promise<number> {
  const out = join(dir, `callgrind.${side}`);
  const proc = spawn(
    'valgrind',
    ['--tool=callgrind', `--callgrind-out-file=${out}.%p`, process.execPath, '--import', 'tsx', new URL(import.meta.url).pathname],
    { env: { ...process.env, [CHILD]: JSON.stringify({ alg, side, calls, dir }) }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  let exitCode: number | null = null;
  const exited = new Promise<void>((resolve) =>
    proc.on('close', (code) => {
      exitCode = code ?? 1;
      resolve();
    }),
  );
  /** Until the child has written `side.signal`; throws if it exits first. */
  const signalled = async (signal: string): Promise<void> => {
    while (!existsSync(join(dir, `${side}.${signal}`))) {
      if (exitCode !== null) throw new Error(`${side} (${alg}) exited with ${exitCode} before "${signal}": ${stderr.slice(-500)}`);
      await sleep(200);
    }
  };
  await signalled('warm');
  spawnSync('callgrind_control', ['-z', String(proc.pid)]);
  writeFileSync(join(dir, `${side}.go`), '');
  await signalled('done');
  spawnSync('callgrind_control', ['-d', String(proc.pid)]);
  writeFileSync(join(dir, `${side}.dumped`), '');
  await exited;
  // The dump made on request is the file with a part number (the one at exit has none).
  const dump = readdirSync(dir).find((f) => f.startsWith(`callgrind.${side}.`) && /\.\d+\.\d+$/.test(f));
  if (dump === undefined) throw new Error(`no callgrind dump for ${side}`);
  const summary = /^summary: (\d+)/m.exec(readFileSync(join(dir, dump), 'utf8'));
  if (summary === null) throw new Error(`no summary line in ${dump}`);
  return Number(summary[1]) / calls;
}

export function valgrindAvailable(): boolean {
  return spawnSync('valgrind', ['--version']).status === 0 && spawnSync('callgrind_control', ['--version']).status === 0;
}

export async function runVerifyInstructions(): Promise<VerifyInstructionsResult[]> {
  const results: VerifyInstructionsResult[] = [];
  for (const alg of ['ES256', 'RS256'] as const) {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-verify-instr-'));
    try {
      writeFileSync(join(dir, 'keys.json'), JSON.stringify(await newKeyPair(alg)));
      // The two sides in parallel: instruction counts do not depend on what else runs.
      const [jose, validator] = await Promise.all([countSide(alg, 'jose', CALLS[alg], dir), countSide(alg, 'validator', CALLS[alg], dir)]);
      results.push({ alg, calls: CALLS[alg], joseInstructions: Math.round(jose), validatorInstructions: Math.round(validator), ratio: validator / jose });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log('\n### plugins/verify-instructions.ts (instructions per verification, callgrind, all threads)\n');
  console.log('| alg | calls | raw jose | validator | ratio |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of results) {
    console.log(`| ${r.alg} | ${r.calls} | ${r.joseInstructions.toLocaleString('en')} | ${r.validatorInstructions.toLocaleString('en')} | ${r.ratio.toFixed(3)}× |`);
  }
  return results;
}

if (process.env[CHILD] !== undefined) await child();
