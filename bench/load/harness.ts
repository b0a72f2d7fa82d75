/**
 * The load benchmark: runs every row against one shared backend, in one process tree and one
 * run, and reports throughput, latency, CPU per request and peak RSS of each, with ratios.
 *
 * Per row: start → one checked request (must be 200 with a JSON-RPC result) → wrk warm-up →
 * CPU snapshot → measured wrk run → CPU snapshot + peak RSS → stop.
 *
 * Environment: BENCH_ROUNDS (passes over all rows, each row reporting its median round;
 * default 1), BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 3), BENCH_CONNECTIONS
 * (default 32), BENCH_THREADS (wrk threads, default 1), BENCH_ROWS (name filter, see selection.ts),
 * BENCH_START_TIMEOUT (s, gateway readiness, default 20), BENCH_NGINX / BENCH_WRK (binaries),
 * BENCH_NOISY_PERCENT (other processes' CPU share that marks a row noisy, default 10),
 * BENCH_STRICT=1 (exit non-zero when any row is not clean), BENCH_COMPARE (below).
 *
 * BENCH_COMPARE=[label=]path: another checkout of this repository, installed (checkout.ts).
 * Every gatehouse row gets a twin, `<row> @ <label>`, right after it: the same row with the
 * gateway of that checkout. Within a round a row and its twin run back to back, the twin first
 * in every other round, so an even BENCH_ROUNDS gives each side each place equally. The report
 * adds, per pair, this checkout's CPU µs/request ÷ the other's (of the reported rounds, and per
 * round), and is written to bench/results/compare-load.{json,md} instead of latest.*: a compare
 * run's table is not the benchmark's result of this code.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, release, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBackendProcess } from './backend.ts';
import { compareCheckoutOf, thisCheckoutOf } from './checkout.ts';
import { clockTicksPerSecond, cpuDeltaMicros, cpuSnapshot, machineBusyMicros, ownTreeMicros, peakRssKiB } from './cpu.ts';
import { nginxVersion } from './nginx.ts';
import { httpRequest, installCleanupHandlers, onCleanup, stopAll } from './process.ts';
import {
  computeRatios,
  markdownReport,
  pickMedian,
  markdownTable,
  ratioSummary,
  twinTable,
  type CheckoutInfo,
  type LoadReport,
  type LoadSettings,
  type MachineInfo,
  type RowResult,
} from './report.ts';
import { rows as allRows } from './rows.ts';
import { roundOrder, selectedRows, withTwins } from './selection.ts';
import { NotAvailable, type Row, type RowContext, type Target } from './target.ts';
import { CALL_BODY, CALL_HEADERS, errorCount, runWrk, wrkVersion } from './wrk.ts';

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

export function envNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}=${raw}: expected a number >= ${min}`);
  return Math.round(n);
}

export function settingsFromEnv(): LoadSettings {
  return {
    rounds: envNumber('BENCH_ROUNDS', 1, 1),
    durationSeconds: envNumber('BENCH_DURATION', 10, 1),
    warmupSeconds: envNumber('BENCH_WARMUP', 3, 0),
    connections: envNumber('BENCH_CONNECTIONS', 32, 1),
    threads: envNumber('BENCH_THREADS', 1, 1),
    clockTicksPerSecond: clockTicksPerSecond(),
    rowsFilter: process.env['BENCH_ROWS']?.trim() || null,
  };
}

function machineInfo(): MachineInfo {
  let cpuModel = 'unknown';
  try {
    cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpuModel;
  } catch {
    /* not Linux */
  }
  return {
    cpuModel,
    cores: availableParallelism(),
    kernel: release(),
    node: process.version,
    nginx: nginxVersion() ?? null,
    wrk: wrkVersion() ?? null,
    date: new Date().toISOString(),
  };
}

const checkoutInfo = ({ label, root }: { label: string; root: string }): CheckoutInfo => ({ label, root });

const log = (msg: string): void => {
  process.stderr.write(`${msg}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

const INITIALIZE_BODY = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'gatehouse-load-bench', version: '1' } } });

/**
 * Opens the session the benchmarked requests name (the backend gives out the id wrk sends):
 * behind incoming auth, the gateway then knows it as the benchmark principal's, as it would a
 * real client's, and answers only that principal on it.
 */
export async function openSession(url: string, headers: Record<string, string>): Promise<void> {
  // A row whose requests name no session (a 2026-07-28 client's stand alone) opens none.
  if (headers['mcp-session-id'] === undefined) return;
  const { 'mcp-session-id': _, ...rest } = headers;
  const res = await httpRequest(url, 'POST', rest, INITIALIZE_BODY, 5000);
  if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status} ${res.body.slice(0, 200)}`);
}

/** What every request of a row sends: its headers over CALL_HEADERS (an empty value drops the header), and its body. */
export function rowRequest(row: Row, target: Target): { headers: Record<string, string>; body: string } {
  const merged: Record<string, string> = { ...CALL_HEADERS, ...row.headers, ...target.headers };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(merged)) if (value !== '') headers[name] = value;
  return { headers, body: row.body ?? CALL_BODY };
}

/** One request as wrk will send it; throws unless it is a 200 with a JSON-RPC result. */
export async function checkRequest(url: string, headers: Record<string, string>, body = CALL_BODY): Promise<void> {
  const res = await httpRequest(url, 'POST', headers, body, 5000);
  if (res.status !== 200) throw new Error(`check request: HTTP ${res.status} ${res.body.slice(0, 200)}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body);
  } catch {
    throw new Error(`check request: body is not JSON (content-type ${String(res.headers['content-type'])}): ${res.body.slice(0, 200)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || !('result' in parsed)) {
    throw new Error(`check request: no JSON-RPC result: ${res.body.slice(0, 200)}`);
  }
}

/** process.hrtime in µs: CLOCK_MONOTONIC on Linux, the clock of V8's CPU profiles too. */
const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/** One measured run of a row: its processes (the whole tree) and when it ran, in monotonic µs. */
export interface MeasuredRun {
  pids: readonly number[];
  startMicros: number;
  endMicros: number;
}

async function measureRow(row: Row, ctx: RowContext, backendPid: number, s: LoadSettings, onMeasured?: (row: Row, run: MeasuredRun) => void): Promise<RowResult> {
  const result = (status: RowResult['status'], reason: string | null): RowResult => ({
    name: row.name,
    role: row.role,
    ...(row.twinOf === undefined ? {} : { twinOf: row.twinOf }),
    status,
    reason,
    measured: null,
    rounds: [],
  });
  log(`▶ ${row.name}: starting`);
  let target: Target;
  try {
    target = await row.start(ctx);
  } catch (err) {
    const status = err instanceof NotAvailable ? 'unavailable' : 'failed';
    log(`  ${status}: ${reasonOf(err)}`);
    return result(status, reasonOf(err));
  }
  try {
    const { headers, body } = rowRequest(row, target);
    await openSession(target.url, headers);
    await checkRequest(target.url, headers, body);
    const wrk = { url: target.url, connections: s.connections, threads: s.threads, headers, body, dir: ctx.tmpDir };
    if (s.warmupSeconds > 0) {
      log(`  warm-up ${s.warmupSeconds} s`);
      const warm = await runWrk({ ...wrk, seconds: s.warmupSeconds, label: `${row.name}-warmup` });
      if (errorCount(warm.errors) > 0) log(`  ⚠ warm-up errors: ${JSON.stringify(warm.errors)}`);
    }
    log(`  measuring ${s.durationSeconds} s`);
    const before = cpuSnapshot(target.pids);
    const backendBefore = cpuSnapshot([backendPid]);
    const [busyBefore, ownBefore, t0, startMicros] = [machineBusyMicros(), ownTreeMicros(), performance.now(), monotonicMicros()];
    const w = await runWrk({ ...wrk, seconds: s.durationSeconds, label: row.name });
    const [wallMicros, endMicros] = [(performance.now() - t0) * 1000, monotonicMicros()];
    const foreignMicros = machineBusyMicros() - busyBefore - (ownTreeMicros() - ownBefore);
    const after = cpuSnapshot(target.pids);
    const cpuMicros = cpuDeltaMicros(before, after);
    onMeasured?.(row, { pids: [...new Set([...before.keys(), ...after.keys()])], startMicros, endMicros });
    const backendMicros = cpuDeltaMicros(backendBefore, cpuSnapshot([backendPid]));
    const peakRssMiB = peakRssKiB(target.pids) / 1024;
    const perRequest = (us: number): number => (w.requests > 0 ? us / w.requests : Number.NaN);
    const flagged = errorCount(w.errors) > 0 || w.requests === 0;
    const foreignCpuPercent = Math.max(0, (100 * foreignMicros) / (wallMicros * availableParallelism()));
    log(
      `  ${w.rps.toFixed(0)} req/s, ${perRequest(cpuMicros).toFixed(1)} µs CPU/req, ` +
        `other processes ${foreignCpuPercent.toFixed(0)}% of the machine${flagged ? ' ⚠ errors' : ''}`,
    );
    return {
      ...result(flagged ? 'flagged' : 'ok', flagged ? `wrk errors: ${JSON.stringify(w.errors)}` : null),
      measured: {
        requests: w.requests,
        seconds: w.seconds,
        rps: w.rps,
        latencyAvgMs: w.latencyAvgMs,
        p50Ms: w.p50Ms,
        p75Ms: w.p75Ms,
        p90Ms: w.p90Ms,
        p99Ms: w.p99Ms,
        cpuMicros,
        cpuMicrosPerRequest: perRequest(cpuMicros),
        cpuVsNginx: null,
        backendCpuMicrosPerRequest: row.role === 'direct' ? null : perRequest(backendMicros),
        peakRssMiB,
        foreignCpuPercent,
        errors: w.errors,
      },
    };
  } catch (err) {
    log(`  failed: ${reasonOf(err)}`);
    return result('failed', reasonOf(err));
  } finally {
    await target.stop().catch((err: unknown) => log(`  stopping ${row.name}: ${reasonOf(err)}`));
  }
}

export interface RunLoadOptions {
  rows?: Row[];
  settings?: LoadSettings;
  /** Write bench/results/latest.{json,md}, or compare-load.{json,md} with BENCH_COMPARE (default true). */
  write?: boolean;
  /** Called after each measured run (bench/profile: which profiles and samples are the row's). */
  onMeasured?: (row: Row, run: MeasuredRun) => void;
}

/** Runs the load benchmark, prints the table and ratios, writes the results. */
export async function runLoad(opts: RunLoadOptions = {}): Promise<LoadReport> {
  installCleanupHandlers();
  const settings = opts.settings ?? settingsFromEnv();
  const other = compareCheckoutOf();
  const rowList = opts.rows ?? selectedRows(withTwins(allRows, other));
  const machine = machineInfo();
  if (machine.wrk === null) throw new Error('wrk not found (apt-get install -y wrk): the load benchmark needs it');

  const tmpDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const removeTmp = onCleanup(() => rmSync(tmpDir, { recursive: true, force: true }));
  const results: RowResult[] = [];
  try {
    const backend = await startBackendProcess();
    const ctx: RowContext = { backendUrl: backend.url, tmpDir };
    log(`load: backend on ${backend.url}; ${settings.durationSeconds} s per row after ${settings.warmupSeconds} s warm-up, ` +
      `${settings.connections} connections` + (other === null ? '' : `; each gatehouse row also against ${other.label} (${other.root})`));
    // Rounds interleave the rows, so a burst of load from elsewhere spoils one round of a few
    // rows rather than every round of one row.
    const perRow: RowResult[][] = rowList.map(() => []);
    for (let round = 1; round <= settings.rounds; round++) {
      if (settings.rounds > 1) log(`round ${round}/${settings.rounds}`);
      for (const i of roundOrder(rowList, round)) {
        const row = rowList[i]!;
        const previous = perRow[i] ?? [];
        if (previous.some((r) => r.status === 'unavailable')) continue; // do not wait for it again
        previous.push(await measureRow(row, ctx, backend.child.pid, settings, opts.onMeasured));
        perRow[i] = previous;
        await sleep(500);
      }
    }
    results.push(...perRow.map(pickMedian));
    await backend.child.stop();
  } finally {
    await stopAll(); // also removes tmpDir
    removeTmp();
  }

  const compare = other === null ? null : { this: checkoutInfo(thisCheckoutOf()), other: checkoutInfo(other) };
  const report: LoadReport = { machine, settings, ...(compare === null ? {} : { compare }), rows: results, ratios: computeRatios(results) };
  const twins = twinTable(report);
  process.stdout.write(`\n## Load benchmark\n\n${markdownTable(report.rows)}\n\n${twins === '' ? '' : `${twins}\n\n`}${ratioSummary(report)}\n`);
  if (opts.write !== false) {
    mkdirSync(RESULTS_DIR, { recursive: true });
    const base = compare === null ? 'latest' : 'compare-load';
    writeFileSync(join(RESULTS_DIR, `${base}.json`), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(join(RESULTS_DIR, `${base}.md`), markdownReport(report));
    process.stdout.write(`\nwrote ${join(RESULTS_DIR, `${base}.json`)} and ${base}.md\n`);
  }
  return report;
}

/**
 * True when the run should exit non-zero: a non-gatehouse row broke (the harness itself is
 * wrong), or, with BENCH_STRICT=1, any row is not `ok` (errors, gateway not available).
 */
export function reportFails(report: LoadReport, strict = process.env['BENCH_STRICT'] === '1'): boolean {
  return report.rows.some((r) => (r.role !== 'subject' && r.status === 'failed') || (strict && r.status !== 'ok'));
}
