/**
 * The files of `npm run bench:profile` (run.ts): which raw profiles are a row's main threads,
 * what a row's folded file is called, and the command line the README records.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** A file name for a row: `gatehouse (anonymous, transparent)` → `gatehouse-anonymous-transparent`. */
export const slug = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

/** The main-thread profiles (thread 0) under `dir` written by one of `pids`. */
export function mainThreadProfiles(dir: string, pids: ReadonlySet<number>): string[] {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  return files
    .filter((f) => {
      const m = /(?:^|\/)CPU\.\d+\.\d+\.(\d+)\.0\.\d+\.cpuprofile$/.exec(f);
      return m !== null && pids.has(Number(m[1]));
    })
    .map((f) => join(dir, f))
    .sort();
}

/** The command that reproduces this run, with the variables it was given. */
export function commandLine(env: NodeJS.ProcessEnv = process.env): string {
  const vars = ['BENCH_ROWS', 'BENCH_DURATION', 'BENCH_WARMUP', 'BENCH_ROUNDS', 'BENCH_CONNECTIONS', 'BENCH_THREADS', 'BENCH_COMPARE']
    .filter((k) => (env[k] ?? '').trim() !== '')
    .map((k) => `${k}=${/^[\w.,/=:-]+$/.test(env[k]!) ? env[k] : `'${env[k]!.replace(/'/g, `'\\''`)}'`}`);
  return [...vars, 'npm run bench:profile'].join(' ');
}

