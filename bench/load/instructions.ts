/**
 * The load rows counted in instructions instead of CPU time: `npm run bench -- --load-instructions-only`
 * (needs valgrind; a few minutes a row). CPU time per request on a shared machine moves by ±20 %
 * from one row to the next; callgrind's instruction counts repeat to about 1 %, whatever else the
 * machine runs, so a ratio between rows (bearer ÷ anonymous, Gatehouse ÷ the HTTP floor) can be
 * read at a few per cent.
 *
 * Per row: its processes start under callgrind, counting nothing yet (node with
 * `--single-threaded --no-memory-reducer`: no concurrent compiler or GC threads and no GC started
 * by the clock, whose timing would vary the count); the session is opened and one request
 * checked as in the load benchmark, then WARM sequential requests run uninstrumented (several
 * times faster) until V8's optimising compiler has settled; counting is turned on, the counters
 * zeroed (by a dump, whose file shows it was done), and N sequential requests are sent on one
 * keep-alive connection in W windows, each dumped. A window's instructions per request = its
 * dumps' total (every process of the row: nginx's worker, a gateway's workers) ÷ its requests.
 * The row's figure is its least window without the garbage collector, plus the collector's
 * ordinary share of a request (instruction-profile.ts, `collections`; `collectorShare` below).
 *
 * Why so: with 3,000 warm-up requests, a quarter of the counted instructions were the optimising
 * compiler, and the bearer rows did not repeat. Natively a gateway stops compiling after some
 * 30,000-90,000 requests, but a clock-driven event (a timer, a once-a-second recheck) can still
 * send a hot function down a path it has not seen, and V8 deoptimises and recompiles it; under
 * valgrind, 50 times slower, such an event comes 50 times as often per request, and in a run
 * of the anonymous row it landed in three windows of five (142k, 189k, 195k, 155k, 145k). What
 * disturbs a window only adds to it: the least window is the row's settled request, which a
 * native run's hundred thousand requests dilute the rest into. Scavenges, which come every few
 * hundred requests, are in every window; most find almost nothing alive, but now and then one
 * finds much (and promotes it), some 70 million instructions at once: in one run of the
 * anonymous row such a scavenge landed in all five windows of 2,000 (177k-248k, where a clean
 * window reads 141k). Ten windows of 1,000 leave it fewer windows to spoil. But an ordinary
 * scavenge comes every thousand requests or so (some 4 million instructions, with the socket
 * buffers it frees): a window of 1,000 holds one or none, so the least window was, for some
 * rows, one that had none, and for others not: rows ~3 % apart for nothing (in one run, two rows
 * of nearly the same work read 142.0k and 143.5k). So the collector is taken apart: the least
 * window of what remains (the mutator's settled request), plus collections per request over all
 * windows times what the median collection costs. Not the collector's mean: now and then a
 * collection costs many times the median (a mark-compact of the old generation, a scavenge that
 * finds much alive: 150 million instructions, 150k a request in a window of 1,000), and like a
 * window V8 recompiled in, it lands in one row's windows and not another's.
 *
 * What it does not count: the kernel. A proxy's socket reads and writes are a large part of its
 * CPU time (see bench/results/profiles/), and they are the same for every row that relays the
 * same bytes: a ratio of instructions is of the user-space work only, and is larger than the
 * ratio of CPU time it stands for. One request at a time also means no batching of requests that
 * arrive together (wrk's 32 connections do batch).
 *
 * Environment: BENCH_ROWS (name filter, selection.ts), BENCH_INSTRUCTION_REQUESTS (N, default
 * 10,000), BENCH_INSTRUCTION_WINDOWS (W, default 10), BENCH_INSTRUCTION_WARMUP (default 50,000),
 * BENCH_INSTRUCTION_KEEP (a directory: each row's
 * callgrind files are copied there, `row-<i>/cg.<pid>`, for callgrind_annotate, with each node
 * process's `perf-<pid>.map`, which names the JIT code callgrind shows as bare addresses; by
 * default the files are deleted with the run). Results: results/load-instructions.{json,md}, and
 * each row's instructions by function in results/profiles/<row>.instructions.md
 * (instruction-profile.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { release, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { startBackendProcess } from './backend.ts';
import { processTree } from './cpu.ts';
import { slug } from '../profile/files.ts';
import { REPO_ROOT } from './checkout.ts';
import { checkRequest, envNumber, openSession, RESULTS_DIR, rowRequest } from './harness.ts';
import { collections, instructionProfile, instructionProfileMarkdown } from './instruction-profile.ts';
import { installCleanupHandlers, onCleanup, setChildWrapper, stopAll, type ChildWrapper } from './process.ts';
import { rows as allRows } from './rows.ts';
import { selectedRows } from './selection.ts';
import { NotAvailable, type Row, type RowContext, type RowRole } from './target.ts';

export interface RowInstructions {
  readonly name: string;
  readonly role: RowRole;
  readonly status: 'ok' | 'unavailable' | 'failed';
  readonly reason: string | null;
  readonly requests: number;
  /** The least window's instructions per request besides the garbage collector, plus the collector's ordinary share (collectorShare). */
  readonly instructionsPerRequest: number | null;
  /** Each window's instructions per request, in order. */
  readonly windows: readonly number[];
  /** The garbage collector's part of each window, per request. */
  readonly collectorWindows: readonly number[];
  /** The garbage collections in each window. */
  readonly collectionWindows: readonly number[];
}

export interface LoadInstructionsReport {
  readonly date: string;
  readonly node: string;
  readonly kernel: string;
  readonly valgrind: string;
  readonly warmup: number;
  /** Requests counted per row, in `windows` windows of equal size. */
  readonly requests: number;
  readonly windows: number;
  readonly rows: readonly RowInstructions[];
}

const DUMP = 'measured';
/** Where each row's profile by function goes, beside bench:profile's CPU profiles. */
const PROFILES_DIR = join(RESULTS_DIR, 'profiles');

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
      // valgrind slows down): a node process's count then depends on the requests only. Node also
      // writes /tmp/perf-<pid>.map, the names of the code it compiles (instruction-profile.ts).
      const node = command === process.execPath ? ['--single-threaded', '--no-memory-reducer', '--perf-basic-prof'] : [];
      // tsx's esbuild service is a Go binary: not part of the row's work, and slow under valgrind.
      // Not counting from the start (`--instr-atstart=no`): the warm-up runs several times faster
      // uninstrumented, so it can be long enough for the optimising compiler to settle.
      return ['valgrind', ['--tool=callgrind', '--instr-atstart=no', '--trace-children=yes', '--trace-children-skip=*esbuild*', `--callgrind-out-file=${join(dir, 'cg.%p')}`, command, ...node, ...args]];
    },
  };
}

/**
 * The row's requests, one at a time on one keep-alive connection: the counted ones and the
 * pokes alike. A poke of another kind (a GET /healthz on a new connection, as first written)
 * gave the hot functions type feedback the warm-up had not, and V8 deoptimised and recompiled
 * them inside the counted window: a quarter of its instructions were the optimising compiler.
 */
class RowClient {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });
  readonly #url: string;
  readonly #headers: Record<string, string>;
  readonly #body: string;

  constructor(url: string, headers: Record<string, string>, body: string) {
    this.#url = url;
    this.#headers = { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    this.#body = body;
  }

  /** One request; resolves with its status. */
  send(): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const req = request(this.#url, { method: 'POST', agent: this.#agent, headers: this.#headers }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', reject);
      });
      req.once('error', reject);
      req.setTimeout(60_000, () => req.destroy(new Error('no answer in 60 s')));
      req.end(this.#body);
    });
  }

  /** `n` requests one after the other; throws on any status but 200. */
  async sequential(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const status = await this.send();
      if (status !== 200) throw new Error(`request ${i + 1}: HTTP ${status}`);
    }
  }

  close(): void {
    this.#agent.destroy();
  }
}

/**
 * Runs `callgrind_control args` and resolves once it is done. A process under valgrind takes the
 * command only when it next runs: an idle gateway would wait for its next timer (and without a
 * timer, never), so until the command is done the target is sent one of the row's own requests
 * every 100 ms (RowClient). The one or two that land inside a counted window are requests like
 * the 2,000 counted in it.
 */
async function callgrindControl(client: RowClient, ...args: string[]): Promise<void> {
  let done = false;
  const exited = new Promise<void>((resolve) => {
    const control = spawn('callgrind_control', args, { stdio: 'ignore' });
    control.once('exit', () => resolve());
    control.once('error', () => resolve());
  });
  void exited.then(() => (done = true));
  while (!done) {
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 100))]);
    // One at a time: the next poke waits for this one's answer.
    if (!done) await client.send().catch(() => 0);
  }
}

/** The instructions of one window: all of them, and the garbage collector's part in how many collections. */
export interface DumpCount {
  readonly instructions: number;
  readonly collector: number;
  readonly collections: number;
}

/**
 * The total of the dumps named `trigger` in `dir` of every process of `pids` (callgrind writes a
 * process's n-th dump to `cg.<pid>.<n>`), or null while one of them has none. A process dumped
 * twice under one name counts both: a dump zeroes the counters, so the second holds only what
 * ran after the first.
 */
export function dumpTotal(dir: string, pids: readonly string[], trigger: string): DumpCount | null {
  const seen = new Set<string>();
  let instructions = 0;
  let collector = 0;
  let collected = 0;
  for (const file of readdirSync(dir)) {
    const pid = /^cg\.(\d+)\.\d+$/.exec(file)?.[1];
    if (pid === undefined || !pids.includes(pid)) continue;
    const text = readFileSync(join(dir, file), 'utf8');
    if (!text.includes(`desc: Trigger: dump ${trigger}\n`)) continue;
    const m = /^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text);
    if (m === null) continue;
    seen.add(pid);
    instructions += Number(m[1]);
    const gc = collections(text);
    collector += gc.instructions;
    collected += gc.count;
  }
  return seen.size < pids.length ? null : { instructions, collector, collections: collected };
}

/**
 * The garbage collector's ordinary share of a request, from windows of equal size (`collector`:
 * its instructions per request in each, `collections`: how many in each): collections per
 * window on average times the median collection's instructions (per request of a window).
 */
export function collectorShare(collector: readonly number[], collections: readonly number[]): number {
  const each: number[] = [];
  let count = 0;
  for (let w = 0; w < collector.length; w++) {
    count += collections[w]!;
    if (collections[w]! > 0) each.push(collector[w]! / collections[w]!);
  }
  if (each.length === 0) return 0;
  each.sort((a, b) => a - b);
  const mid = each.length >> 1;
  const median = each.length % 2 === 1 ? each[mid]! : (each[mid - 1]! + each[mid]!) / 2;
  return (count / collector.length) * median;
}

/** Each window's instructions per request besides the garbage collector. */
function besidesCollector(windows: readonly number[], collector: readonly number[]): number[] {
  return windows.map((v, w) => v - (collector[w] ?? 0));
}

/** A row's figure from its windows (per request): the least window without the collector, plus the collector's ordinary share. */
export function rowFigure(windows: readonly number[], collector: readonly number[], collections: readonly number[]): number {
  return Math.min(...besidesCollector(windows, collector)) + collectorShare(collector, collections);
}

/**
 * Dumps the counters of `pids` as `trigger` (which also zeroes them) and waits for every
 * process's file. vgdb sometimes gives up on a process without a word (one row's dump never
 * came, and its count would have silently included the warm-up had it been a zeroing), so the
 * command is sent again, up to three times, while a file is missing after 10 s.
 */
async function dumpCounters(client: RowClient, dir: string, pids: readonly string[], trigger: string): Promise<DumpCount> {
  for (let attempt = 0; attempt < 3; attempt++) {
    await callgrindControl(client, `--dump=${trigger}`, ...pids);
    for (let wait = 0; wait < 50; wait++) {
      const total = dumpTotal(dir, pids, trigger);
      if (total !== null) return total;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  throw new Error(`callgrind wrote no "${trigger}" dump for some of the row's processes (${pids.join(', ')}), asked three times`);
}

interface CountSettings {
  readonly warmup: number;
  readonly requests: number;
  readonly windows: number;
}

async function countRow(row: Row, ctx: RowContext, dir: string, settings: CountSettings): Promise<RowInstructions> {
  const { warmup, requests, windows: count } = settings;
  const result = (status: RowInstructions['status'], reason: string | null, windows: number[] = [], collector: number[] = [], collected: number[] = []): RowInstructions => ({
    name: row.name,
    role: row.role,
    status,
    reason,
    requests,
    instructionsPerRequest: windows.length === 0 ? null : rowFigure(windows, collector, collected),
    windows,
    collectorWindows: collector,
    collectionWindows: collected,
  });
  mkdirSync(dir, { recursive: true });
  process.stderr.write(`▶ ${row.name}: starting under callgrind\n`);
  setChildWrapper(callgrindWrapper(dir));
  let target;
  try {
    target = await row.start(ctx);
  } catch (err) {
    takePerfMaps(dir); // a gateway that did not get ready still wrote one
    return result(err instanceof NotAvailable ? 'unavailable' : 'failed', err instanceof Error ? err.message : String(err));
  } finally {
    setChildWrapper(null);
  }
  let client: RowClient | null = null;
  try {
    const { headers, body } = rowRequest(row, target);
    await openSession(target.url, headers);
    await checkRequest(target.url, headers, body);
    client = new RowClient(target.url, headers, body);
    await client.sequential(warmup);
    // By pid: another run of this benchmark on the machine keeps its own counters. Only those
    // callgrind runs: tsx's esbuild service, a child too, is not one.
    const pids = processTree(target.pids).filter(underCallgrind).map(String);
    await callgrindControl(client, '-i', 'on', ...pids);
    // Zeroed by a dump rather than `-z`: the dump's file shows that it was done.
    await dumpCounters(client, dir, pids, 'warm');
    const size = Math.ceil(requests / count);
    const windows: number[] = [];
    const collector: number[] = [];
    const collected: number[] = [];
    for (let w = 0; w < count; w++) {
      await client.sequential(size);
      const counted = await dumpCounters(client, dir, pids, `${DUMP}-${w + 1}`);
      const perRequest = counted.instructions / size;
      if (perRequest < 1_000) throw new Error(`callgrind counted ${Math.round(perRequest)} instructions a request: its instrumentation did not turn on`);
      windows.push(perRequest);
      collector.push(counted.collector / size);
      collected.push(counted.collections);
    }
    // The profile of the window the figure stands on: the settled request, as the table has it.
    const mutator = besidesCollector(windows, collector);
    writeRowProfile(row.name, dir, `${DUMP}-${mutator.indexOf(Math.min(...mutator)) + 1}`, size);
    const n = (v: number): string => Math.round(v).toLocaleString('en-US');
    process.stderr.write(
      `  ${n(rowFigure(windows, collector, collected))} instructions/request: ${n(Math.min(...mutator))} besides the collector in the least window, ${n(collectorShare(collector, collected))} collecting (windows: ${windows.map(n).join(', ')}; collections: ${collected.join(', ')})\n`,
    );
    return result('ok', null, windows, collector, collected);
  } catch (err) {
    return result('failed', err instanceof Error ? err.message : String(err));
  } finally {
    client?.close();
    await target.stop();
    takePerfMaps(dir);
  }
}

/**
 * Whether `pid` runs under callgrind: its executable is valgrind's tool. (Not whether its output
 * file exists: a forked process, nginx's worker, gets one only at its first dump.)
 */
function underCallgrind(pid: number): boolean {
  try {
    return /callgrind/.test(readlinkSync(`/proc/${pid}/exe`));
  } catch {
    return false;
  }
}

/** The row's profile by function in its window `trigger` of `requests`, in results/profiles/<row>.instructions.md. */
function writeRowProfile(name: string, dir: string, trigger: string, requests: number): void {
  const profile = instructionProfile(dir, trigger, requests, REPO_ROOT);
  mkdirSync(PROFILES_DIR, { recursive: true });
  writeFileSync(join(PROFILES_DIR, `${slug(name)}.instructions.md`), instructionProfileMarkdown(name, profile));
}

/** Moves the row's processes' perf maps (node leaves them in /tmp) into its directory. */
function takePerfMaps(dir: string): void {
  for (const file of readdirSync(dir)) {
    const pid = /^cg\.(\d+)$/.exec(file)?.[1];
    const map = `/tmp/perf-${pid}.map`;
    if (pid === undefined || !existsSync(map)) continue;
    cpSync(map, join(dir, basename(map)));
    rmSync(map, { force: true });
  }
}

/** Copies each row's callgrind files (`row-<i>/cg.<pid>`) from `from` to `to`, leaving the rest. */
function copyDumps(from: string, to: string): void {
  for (const row of readdirSync(from).filter((name) => /^row-\d+$/.test(name))) {
    for (const file of readdirSync(join(from, row)).filter((name) => /^(cg\.\d+|perf-\d+\.map$)/.test(name))) cpSync(join(from, row, file), join(to, row, file));
  }
  process.stderr.write(`callgrind files kept in ${to}\n`);
}

/** Runs the selected load rows under callgrind, one after the other. */
export async function runLoadInstructions(): Promise<LoadInstructionsReport> {
  const windows = envNumber('BENCH_INSTRUCTION_WINDOWS', 10, 1);
  const requests = envNumber('BENCH_INSTRUCTION_REQUESTS', 10_000, windows);
  const warmup = envNumber('BENCH_INSTRUCTION_WARMUP', 50_000, 0);
  installCleanupHandlers();
  const keep = process.env.BENCH_INSTRUCTION_KEEP || null;
  const tmpDir = mkdtempSync(join(tmpdir(), 'gatehouse-instructions-'));
  onCleanup(() => {
    if (keep !== null) copyDumps(tmpDir, keep);
    rmSync(tmpDir, { recursive: true, force: true });
  });
  const rows: RowInstructions[] = [];
  try {
    const backend = await startBackendProcess();
    const ctx: RowContext = { backendUrl: backend.url, tmpDir };
    // The workers rows share the port between processes whose dumps come at different times, and need Redis: left to the CPU benchmark.
    for (const [i, row] of selectedRows(allRows).filter((r) => !/workers?\)/.test(r.name)).entries()) {
      rows.push(await countRow(row, ctx, join(tmpDir, `row-${i}`), { warmup, requests, windows }));
    }
  } finally {
    await stopAll();
  }
  return { date: new Date().toISOString(), node: process.version, kernel: release(), valgrind: valgrindVersion() ?? 'unknown', warmup, requests, windows, rows };
}

/** A row's least window without the garbage collector (null without windows). */
function leastBesidesCollector(row: RowInstructions): number | null {
  return row.windows.length === 0 ? null : Math.min(...besidesCollector(row.windows, row.collectorWindows));
}

/**
 * The report as Markdown: each row's instructions per request and its ratios to nginx,
 * http-proxy, the HTTP floor and the anonymous gateway, and to the anonymous gateway without
 * the collector on either side: a row whose every scavenge copies much (old garbage pointing at
 * young objects, which only a full collection ends) shows it in its collector column, and that
 * last ratio is the one it cannot move.
 */
export function instructionsMarkdown(report: LoadInstructionsReport): string {
  const find = (fragment: string): RowInstructions | undefined => report.rows.find((r) => r.name.includes(fragment));
  const of = (fragment: string): number | null => find(fragment)?.instructionsPerRequest ?? null;
  const anonymous = find('gatehouse (anonymous, transparent)');
  const anonymousBesides = anonymous === undefined ? null : leastBesidesCollector(anonymous);
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
    `- Per row: ${report.warmup} sequential requests to warm up (uninstrumented), then ${report.requests} counted in ${report.windows} windows, one at a time on one connection; a row's figure is its least window (what disturbs a window, V8 recompiling, only adds) without the garbage collector, plus the collector's ordinary share (collections per request over all windows × the median collection: a scavenge every thousand requests or so, so a window holds one or none, and a rare heavy one lands in one row and not another); the range shows how far the windows spread`,
    '- User-space instructions of every process of the row (callgrind; node with `--single-threaded --no-memory-reducer`); the kernel is not counted',
    '',
    `| row | instructions/request | of which collecting garbage | windows | ${bases.map(([name]) => name).join(' | ')} | ×anonymous, the collector apart |`,
    `|---|---:|---:|---:|${bases.map(() => '---:').join('|')}|---:|`,
  ];
  for (const row of report.rows) {
    const value = row.instructionsPerRequest;
    const shown = value === null ? `${row.status}: ${(row.reason ?? '').split('\n')[0]}` : Math.round(value).toLocaleString('en-US');
    const thousands = (v: number): string => `${Math.round(v / 1000)}k`;
    const range = row.windows.length === 0 ? '–' : `${thousands(Math.min(...row.windows))}–${thousands(Math.max(...row.windows))}`;
    const collected = row.collectorWindows.length === 0 ? '–' : Math.round(collectorShare(row.collectorWindows, row.collectionWindows)).toLocaleString('en-US');
    lines.push(`| ${row.name} | ${shown} | ${collected} | ${range} | ${bases.map(([, base]) => ratio(value, base)).join(' | ')} | ${ratio(leastBesidesCollector(row), anonymousBesides)} |`);
  }
  return `${lines.join('\n')}\n`;
}
