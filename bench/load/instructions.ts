/**
 * The load rows counted in instructions instead of CPU time: `npm run bench -- --load-instructions-only`
 * (needs valgrind; a few minutes a row). CPU time per request on a shared machine moves by ±20 %
 * from one row to the next; callgrind's instruction counts repeat to about 1 %, whatever else the
 * machine runs, so a ratio between rows (bearer ÷ anonymous, Gatehouse ÷ the HTTP floor) can be
 * read at a few per cent.
 *
 * Per row: its processes start under callgrind (node with `--single-threaded --no-memory-reducer`:
 * no concurrent compiler or GC threads and no GC started by the clock, whose timing would vary
 * the count), the session is opened and one
 * request checked as in the load benchmark, then WARM sequential requests (the optimising
 * compiler settles), the counters are zeroed (`callgrind_control -z`), N sequential requests are
 * sent on one keep-alive connection, and the counters are dumped. Instructions per request = the
 * dumps' total (every process of the row: nginx's worker, a gateway's workers) ÷ N.
 *
 * What it does not count: the kernel. A proxy's socket reads and writes are a large part of its
 * CPU time (see bench/results/profiles/), and they are the same for every row that relays the
 * same bytes: a ratio of instructions is of the user-space work only, and is larger than the
 * ratio of CPU time it stands for. One request at a time also means no batching of requests that
 * arrive together (wrk's 32 connections do batch).
 *
 * Environment: BENCH_ROWS (name filter, selection.ts), BENCH_INSTRUCTION_REQUESTS (N, default
 * 8000), BENCH_INSTRUCTION_WARMUP (default 3000). Results: results/load-instructions.{json,md}.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackendProcess } from './backend.ts';
import { processTree } from './cpu.ts';
import { checkRequest, envNumber, openSession } from './harness.ts';
import { installCleanupHandlers, onCleanup, setChildWrapper, stopAll, type ChildWrapper } from './process.ts';
import { rows as allRows } from './rows.ts';
import { selectedRows } from './selection.ts';
import { NotAvailable, type Row, type RowContext, type RowRole } from './target.ts';
import { CALL_BODY, CALL_HEADERS } from './wrk.ts';

export interface RowInstructions {
  readonly name: string;
  readonly role: RowRole;
  readonly status: 'ok' | 'unavailable' | 'failed';
  readonly reason: string | null;
  readonly requests: number;
  readonly instructionsPerRequest: number | null;
}

export interface LoadInstructionsReport {
  readonly date: string;
  readonly node: string;
  readonly kernel: string;
  readonly valgrind: string;
  readonly warmup: number;
  readonly requests: number;
  readonly rows: readonly RowInstructions[];
}

const DUMP = 'measured';

export function valgrindVersion(): string | null {
  const res = spawnSync('valgrind', ['--version'], { encoding: 'utf8' });
  return res.status === 0 ? res.stdout.trim() : null;
}

/** Every child of a row under callgrind, one output file per process; node single-threaded. */
export function callgrindWrapper(dir: string): ChildWrapper {
  return {
    slowdown: 15,
    wrap(command, args) {
      // No helper threads, and no memory reducer (it starts full GCs by the wall clock, which
      // valgrind slows down): a node process's count then depends on the requests only.
      const node = command === process.execPath ? ['--single-threaded', '--no-memory-reducer'] : [];
      // tsx's esbuild service is a Go binary: not part of the row's work, and slow under valgrind.
      return ['valgrind', ['--tool=callgrind', '--trace-children=yes', '--trace-children-skip=*esbuild*', `--callgrind-out-file=${join(dir, 'cg.%p')}`, command, ...node, ...args]];
    },
  };
}

/**
 * Runs `callgrind_control args` and resolves once it is done. A process under valgrind takes the
 * command only when it next runs: an idle gateway would wait for its next timer (and without a
 * timer, never), so until the command is done the target is sent a GET every 100 ms. The one or
 * two that land inside the counted window are small requests, against 8,000 counted ones.
 */
async function callgrindControl(url: string, ...args: string[]): Promise<void> {
  let done = false;
  const exited = new Promise<void>((resolve) => {
    const control = spawn('callgrind_control', args, { stdio: 'ignore' });
    control.once('exit', () => resolve());
    control.once('error', () => resolve());
  });
  void exited.then(() => (done = true));
  while (!done) {
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 100))]);
    if (!done) void poke(url);
  }
}

function poke(url: string): Promise<void> {
  return new Promise((resolve) => {
    const req = request(new URL('/healthz', url), { method: 'GET', agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve());
      res.once('error', () => resolve());
    });
    req.once('error', () => resolve());
    req.setTimeout(5_000, () => req.destroy());
    req.end();
  });
}

/** The total of the dumps named DUMP in `dir`, once every process of the row has written its own. */
export async function dumpedInstructions(dir: string, processes: number): Promise<number> {
  // The files may lag the command's answer: up to 20 s.
  for (let attempt = 0; attempt < 100; attempt++) {
    let total = 0;
    let dumps = 0;
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), 'utf8');
      if (!text.includes(`desc: Trigger: dump ${DUMP}`)) continue;
      const m = /^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text);
      if (m === null) continue;
      dumps++;
      total += Number(m[1]);
    }
    if (dumps >= processes) return total;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`callgrind wrote fewer dumps than the row has processes (${processes})`);
}

/** `n` requests one after the other on one keep-alive connection; throws on any status but 200. */
async function sequential(url: string, headers: Record<string, string>, n: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const all = { ...headers, 'content-length': String(Buffer.byteLength(CALL_BODY)) };
  try {
    for (let i = 0; i < n; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(url, { method: 'POST', agent, headers: all }, (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
        });
        req.once('error', reject);
        req.end(CALL_BODY);
      });
      if (status !== 200) throw new Error(`request ${i + 1}: HTTP ${status}`);
    }
  } finally {
    agent.destroy();
  }
}

/** The processes callgrind runs for the row: those whose output file exists. */
const countProcesses = (dir: string): number => readdirSync(dir).filter((f) => /^cg\.\d+$/.test(f)).length;

async function countRow(row: Row, ctx: RowContext, dir: string, warmup: number, requests: number): Promise<RowInstructions> {
  const result = (status: RowInstructions['status'], reason: string | null, perRequest: number | null = null): RowInstructions => ({
    name: row.name,
    role: row.role,
    status,
    reason,
    requests,
    instructionsPerRequest: perRequest,
  });
  mkdirSync(dir, { recursive: true });
  process.stderr.write(`▶ ${row.name}: starting under callgrind\n`);
  setChildWrapper(callgrindWrapper(dir));
  let target;
  try {
    target = await row.start(ctx);
  } catch (err) {
    return result(err instanceof NotAvailable ? 'unavailable' : 'failed', err instanceof Error ? err.message : String(err));
  } finally {
    setChildWrapper(null);
  }
  try {
    const headers = { ...CALL_HEADERS, ...row.headers, ...target.headers };
    await openSession(target.url, headers);
    await checkRequest(target.url, headers);
    await sequential(target.url, headers, warmup);
    // By pid: another run of this benchmark on the machine keeps its own counters.
    const pids = processTree(target.pids).map(String);
    await callgrindControl(target.url, '-z', ...pids);
    await sequential(target.url, headers, requests);
    await callgrindControl(target.url, `--dump=${DUMP}`, ...pids);
    const total = await dumpedInstructions(dir, countProcesses(dir));
    process.stderr.write(`  ${Math.round(total / requests).toLocaleString('en-US')} instructions/request\n`);
    return result('ok', null, total / requests);
  } catch (err) {
    return result('failed', err instanceof Error ? err.message : String(err));
  } finally {
    await target.stop();
  }
}

/** Runs the selected load rows under callgrind, one after the other. */
export async function runLoadInstructions(): Promise<LoadInstructionsReport> {
  const requests = envNumber('BENCH_INSTRUCTION_REQUESTS', 8000, 1);
  const warmup = envNumber('BENCH_INSTRUCTION_WARMUP', 3000, 0);
  installCleanupHandlers();
  const tmpDir = mkdtempSync(join(tmpdir(), 'gatehouse-instructions-'));
  onCleanup(() => rmSync(tmpDir, { recursive: true, force: true }));
  const rows: RowInstructions[] = [];
  try {
    const backend = await startBackendProcess();
    const ctx: RowContext = { backendUrl: backend.url, tmpDir };
    // The workers rows share the port between processes whose dumps come at different times, and need Redis: left to the CPU benchmark.
    for (const [i, row] of selectedRows(allRows).filter((r) => !/workers?\)/.test(r.name)).entries()) {
      rows.push(await countRow(row, ctx, join(tmpDir, `row-${i}`), warmup, requests));
    }
  } finally {
    await stopAll();
  }
  return { date: new Date().toISOString(), node: process.version, kernel: release(), valgrind: valgrindVersion() ?? 'unknown', warmup, requests, rows };
}

/** The report as Markdown: each row's instructions per request and its ratios to nginx, http-proxy, the HTTP floor and the anonymous gateway. */
export function instructionsMarkdown(report: LoadInstructionsReport): string {
  const of = (fragment: string): number | null => report.rows.find((r) => r.name.includes(fragment))?.instructionsPerRequest ?? null;
  const bases: [string, number | null][] = [
    ['×nginx', of('nginx')],
    ['×http-proxy', of('http-proxy')],
    ['×HTTP floor', of('node floor (HTTP')],
    ['×anonymous', of('gatehouse (anonymous, transparent)')],
  ];
  const ratio = (value: number | null, base: number | null): string => (value === null || base === null ? '–' : (value / base).toFixed(2));
  const lines = [
    '# The load rows in instructions per request',
    '',
    'Generated by `npm run bench -- --load-instructions-only` (bench/load/instructions.ts): run it again rather than edit this file.',
    '',
    `- Date: ${report.date}; Node ${report.node}; ${report.valgrind}; Linux ${report.kernel}`,
    `- Per row: ${report.warmup} sequential requests to warm up, then ${report.requests} counted, one at a time on one connection`,
    '- User-space instructions of every process of the row (callgrind; node with `--single-threaded --no-memory-reducer`); the kernel is not counted',
    '',
    `| row | instructions/request | ${bases.map(([name]) => name).join(' | ')} |`,
    `|---|---:|${bases.map(() => '---:').join('|')}|`,
  ];
  for (const row of report.rows) {
    const value = row.instructionsPerRequest;
    const shown = value === null ? `${row.status}: ${(row.reason ?? '').split('\n')[0]}` : Math.round(value).toLocaleString('en-US');
    lines.push(`| ${row.name} | ${shown} | ${bases.map(([, base]) => ratio(value, base)).join(' | ')} |`);
  }
  return `${lines.join('\n')}\n`;
}
