/**
 * Results of the load benchmark: per-row figures, the ratios taken within one run, and their
 * renderings (a markdown table + ratio summary, and the JSON written to bench/results/).
 *
 * With BENCH_COMPARE, a twin row (`twinOf`) is a subject like any other, and `ratios.twins`
 * pairs each with its row: this checkout's CPU µs/request ÷ the compared one's (`twinTable`).
 */
import type { RowRole } from './target.ts';
import { errorCount, type WrkResult } from './wrk.ts';

/** wrk's figures (without its printed report) and what the harness measured around them. */
export interface Measurement extends Omit<WrkResult, 'raw'> {
  /** user+sys CPU of the target's process tree during the measured run. */
  cpuMicros: number;
  cpuMicrosPerRequest: number;
  /** cpuMicrosPerRequest ÷ nginx's, filled in by `computeRatios`. */
  cpuVsNginx: number | null;
  /** cpuMicrosPerRequest ÷ the bare http-proxy's (the baseline), filled in by `computeRatios`. */
  cpuVsBaseline?: number | null;
  /** CPU of the shared backend per request (proxied rows only). */
  backendCpuMicrosPerRequest: number | null;
  /** Sum of VmHWM over the target's process tree, MiB. */
  peakRssMiB: number;
  /**
   * CPU used by processes outside the benchmark during the measured run, in % of the whole
   * machine: above `NOISY_PERCENT` the row is marked noisy (throughput and latency suspect).
   */
  foreignCpuPercent: number;
}

/** Foreign CPU share above which a row is marked noisy (BENCH_NOISY_PERCENT, default 10). */
export const NOISY_PERCENT = Number(process.env['BENCH_NOISY_PERCENT'] ?? 10);

export const isNoisy = (m: Measurement): boolean => m.foreignCpuPercent > NOISY_PERCENT;

/**
 * `ok`: measured without errors. `flagged`: measured, but wrk saw errors (figures are suspect).
 * `unavailable`: could not be started here (missing binary, gateway not written yet).
 * `failed`: started but broke (wrong answer to the check request, wrk failure).
 */
export type RowStatus = 'ok' | 'flagged' | 'unavailable' | 'failed';

export interface RoundSummary {
  status: RowStatus;
  rps: number | null;
  cpuMicrosPerRequest: number | null;
  foreignCpuPercent: number | null;
}

export interface RowResult {
  name: string;
  role: RowRole;
  /** A twin's subject: the row this one repeats on the BENCH_COMPARE checkout. */
  twinOf?: string;
  status: RowStatus;
  reason: string | null;
  /** The measurement reported: with several rounds, the one where other processes took least CPU. */
  measured: Measurement | null;
  /** Every round of this row, in order (BENCH_ROUNDS). */
  rounds: RoundSummary[];
}

export interface SubjectRatios {
  name: string;
  /** req/s ÷ baseline req/s */
  throughputVsBaseline: number | null;
  /** CPU µs/req ÷ baseline CPU µs/req */
  cpuVsBaseline: number | null;
  /** CPU µs/req ÷ nginx CPU µs/req */
  cpuVsNginx: number | null;
  /** CPU µs/req ÷ the HTTP floor's (the last `floor` row: the least an HTTP proxy in a Node process costs, floor-proxy.ts) */
  cpuVsFloor: number | null;
  /** True when a row the ratio is taken from had errors or was noisy. */
  flagged: boolean;
}

/** A gatehouse row and its twin on the compared checkout: this code ÷ that code. */
export interface TwinRatios {
  /** The row on this checkout. */
  name: string;
  /** Its twin, `<name> @ <label>`. */
  twin: string;
  /** CPU µs/req of the row ÷ its twin's (each its reported round: the median). */
  cpuThisOverOther: number | null;
  /** req/s of the row ÷ its twin's. */
  throughputThisOverOther: number | null;
  /** The same CPU ratio round by round (null where either side was not measured): the pairs ran back to back. */
  cpuPerRound: (number | null)[];
  /** True when either row had errors or was noisy. */
  flagged: boolean;
}

export interface Ratios {
  reference: string | null;
  baseline: string | null;
  /** Every measured row's CPU µs/req ÷ nginx's. */
  cpuVsNginx: Record<string, number | null>;
  subjects: SubjectRatios[];
  /** With BENCH_COMPARE: each gatehouse row against its twin (empty otherwise). */
  twins: TwinRatios[];
}

/** A checkout a compare run measured (BENCH_COMPARE). */
export interface CheckoutInfo {
  /** Short commit (`+modified` when its tracked files differ from it), or the label given. */
  label: string;
  root: string;
}

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  kernel: string;
  node: string;
  nginx: string | null;
  wrk: string | null;
  date: string;
}

export interface LoadSettings {
  /** Passes over all rows; each row reports its median round (by CPU per request). */
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  threads: number;
  clockTicksPerSecond: number;
  /** BENCH_ROWS of the run, when rows were filtered. */
  rowsFilter: string | null;
}

export interface LoadReport {
  machine: MachineInfo;
  settings: LoadSettings;
  /** Only in a BENCH_COMPARE run: the two checkouts whose gateways the rows and their twins ran. */
  compare?: { this: CheckoutInfo; other: CheckoutInfo };
  rows: RowResult[];
  ratios: Ratios;
}

const measuredRow = (r: RowResult | undefined): Measurement | null =>
  r !== undefined && (r.status === 'ok' || r.status === 'flagged') ? r.measured : null;

const ratio = (a: number | undefined, b: number | undefined): number | null =>
  a !== undefined && b !== undefined && b > 0 && Number.isFinite(a) ? a / b : null;

/** Fills `cpuVsNginx` of each row and returns the ratios of the run. */
export function computeRatios(rows: RowResult[]): Ratios {
  const ref = rows.find((r) => r.role === 'reference');
  const base = rows.find((r) => r.role === 'baseline');
  const floor = rows.findLast((r) => r.role === 'floor');
  const refM = measuredRow(ref);
  const baseM = measuredRow(base);
  const floorM = measuredRow(floor);
  const cpuVsNginx: Record<string, number | null> = {};
  for (const r of rows) {
    const m = measuredRow(r);
    if (m === null) continue;
    m.cpuVsNginx = ratio(m.cpuMicrosPerRequest, refM?.cpuMicrosPerRequest);
    m.cpuVsBaseline = ratio(m.cpuMicrosPerRequest, baseM?.cpuMicrosPerRequest);
    cpuVsNginx[r.name] = m.cpuVsNginx;
  }
  const subjects = rows
    .filter((r) => r.role === 'subject')
    .map((r): SubjectRatios => {
      const m = measuredRow(r);
      return {
        name: r.name,
        throughputVsBaseline: ratio(m?.rps, baseM?.rps),
        cpuVsBaseline: ratio(m?.cpuMicrosPerRequest, baseM?.cpuMicrosPerRequest),
        cpuVsNginx: m?.cpuVsNginx ?? null,
        cpuVsFloor: ratio(m?.cpuMicrosPerRequest, floorM?.cpuMicrosPerRequest),
        flagged: [r, base, ref].some((x) => x !== undefined && suspect(x)),
      };
    });
  return { reference: ref?.name ?? null, baseline: base?.name ?? null, cpuVsNginx, subjects, twins: twinRatios(rows) };
}

const suspect = (r: RowResult): boolean => r.status === 'flagged' || (r.measured != null && isNoisy(r.measured));

function twinRatios(rows: RowResult[]): TwinRatios[] {
  const out: TwinRatios[] = [];
  for (const twin of rows) {
    if (twin.twinOf === undefined) continue;
    const row = rows.find((r) => r.name === twin.twinOf);
    if (row === undefined) continue;
    const a = measuredRow(row);
    const b = measuredRow(twin);
    const rounds = Math.min(row.rounds.length, twin.rounds.length);
    out.push({
      name: row.name,
      twin: twin.name,
      cpuThisOverOther: ratio(a?.cpuMicrosPerRequest, b?.cpuMicrosPerRequest),
      throughputThisOverOther: ratio(a?.rps, b?.rps),
      cpuPerRound: Array.from({ length: rounds }, (_, i) => ratio(row.rounds[i]?.cpuMicrosPerRequest ?? undefined, twin.rounds[i]?.cpuMicrosPerRequest ?? undefined)),
      flagged: suspect(row) || suspect(twin),
    });
  }
  return out;
}

function describeErrors(m: Measurement): string {
  const e = m.errors;
  const noise = isNoisy(m) ? `⚠ noisy: other processes took ${m.foreignCpuPercent.toFixed(0)}% CPU` : '';
  if (errorCount(e) === 0) return noise === '' ? '0' : `0; ${noise}`;
  const parts: string[] = [];
  if (e.non2xx > 0) parts.push(`${e.non2xx} HTTP ≥400`);
  for (const k of ['connect', 'read', 'write', 'timeout'] as const) {
    if (e[k] > 0) parts.push(`${e[k]} ${k}`);
  }
  return `⚠ ${parts.join(', ')}${noise === '' ? '' : `; ${noise}`}`;
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
const fixed = (n: number | null | undefined, digits: number): string =>
  n === null || n === undefined || !Number.isFinite(n) ? '—' : n.toFixed(digits);
const times = (n: number | null): string => (n === null ? 'n/a' : `${n.toFixed(2)}×`);
const firstLine = (s: string | null, max = 140): string => {
  const line = (s ?? '').trim().split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** The rows, each with its CPU per request ÷ nginx's and ÷ the bare http-proxy's of the same run. */
export function markdownTable(rows: RowResult[]): string {
  const out = [
    '| target | req/s | p50 ms | p99 ms | CPU µs/req | ×nginx CPU | ×http-proxy CPU | peak RSS MB | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of rows) {
    const m = measuredRow(r);
    if (m === null) {
      const what = r.status === 'unavailable' ? 'not available' : 'failed';
      out.push(`| ${cell(r.name)} | — | — | — | — | — | — | — | ${cell(`${what}: ${firstLine(r.reason)}`)} |`);
      continue;
    }
    out.push(
      `| ${cell(r.name)} | ${m.rps.toFixed(0)} | ${fixed(m.p50Ms, 2)} | ${fixed(m.p99Ms, 2)} | ` +
        `${fixed(m.cpuMicrosPerRequest, 1)} | ${fixed(m.cpuVsNginx, 2)} | ${fixed(m.cpuVsBaseline, 2)} | ` +
        `${fixed(m.peakRssMiB, 1)} | ${describeErrors(m)} |`,
    );
  }
  return out.join('\n');
}

export function ratioSummary(report: LoadReport): string {
  const { ratios, rows } = report;
  const lines: string[] = [];
  const ref = rows.find((r) => r.name === ratios.reference);
  const refM = measuredRow(ref);
  if (refM === null) {
    lines.push(`- no nginx reference in this run${ref ? ` (${firstLine(ref.reason)})` : ''}: no ×nginx ratios`);
  } else {
    const others = rows
      .filter((r) => r !== ref && ratios.cpuVsNginx[r.name] != null)
      .map((r) => `${r.name} ${times(ratios.cpuVsNginx[r.name] ?? null)}`);
    lines.push(`- CPU per request vs nginx (${refM.cpuMicrosPerRequest.toFixed(1)} µs): ${others.join(', ') || 'n/a'}`);
  }
  for (const s of ratios.subjects) {
    const row = rows.find((r) => r.name === s.name);
    if (measuredRow(row) === null) {
      lines.push(`- ${s.name}: ${row?.status === 'failed' ? 'failed' : 'not available'} (${firstLine(row?.reason ?? null)})`);
      continue;
    }
    lines.push(
      `- ${s.name}: throughput ${times(s.throughputVsBaseline)} ${ratios.baseline ?? 'baseline'}; ` +
        `CPU/request ${times(s.cpuVsBaseline)} ${ratios.baseline ?? 'baseline'}, ${times(s.cpuVsNginx)} nginx` +
        (s.cpuVsFloor === null ? '' : `, ${times(s.cpuVsFloor)} the HTTP floor`) +
        (s.flagged ? ' ⚠ (a row had errors or was noisy: ratio suspect)' : ''),
    );
  }
  for (const r of rows) {
    if (r.status === 'flagged') lines.push(`- ⚠ ${r.name}: wrk reported errors; its figures are suspect`);
    if (r.measured !== null && isNoisy(r.measured)) {
      lines.push(
        `- ⚠ ${r.name}: other processes used ${r.measured.foreignCpuPercent.toFixed(0)}% of the machine's CPU during ` +
          'its run; rerun on a quiet machine before quoting it',
      );
    }
  }
  return lines.join('\n');
}

/**
 * With BENCH_COMPARE: per gatehouse row, its CPU µs/request and its twin's, and this ÷ that,
 * of the reported rounds and round by round (empty without twins).
 */
export function twinTable(report: LoadReport): string {
  const { twins } = report.ratios;
  if (twins.length === 0) return '';
  const self = report.compare?.this.label ?? 'this';
  const other = report.compare?.other.label ?? 'the compared checkout';
  const cpu = (name: string): string => fixed(measuredRow(report.rows.find((r) => r.name === name))?.cpuMicrosPerRequest, 1);
  const out = [
    `This checkout (${self}) against ${other}, CPU µs/request, each row and its twin back to back in every round:`,
    '',
    `| gatehouse row | ${cell(self)} | ${cell(other)} | ${cell(self)} ÷ ${cell(other)} | per round | req/s ${cell(self)} ÷ ${cell(other)} |`,
    '|---|---:|---:|---:|---|---:|',
  ];
  for (const t of twins) {
    const perRound = t.cpuPerRound.map((x) => fixed(x, 2)).join(', ');
    out.push(
      `| ${cell(t.name)} | ${cpu(t.name)} | ${cpu(t.twin)} | ${fixed(t.cpuThisOverOther, 2)}${t.flagged ? ' ⚠' : ''} | ${perRound} | ${fixed(t.throughputThisOverOther, 2)} |`,
    );
  }
  if (twins.some((t) => t.flagged)) out.push('', '⚠: a row of the pair had errors or was noisy; rerun before quoting it.');
  return out.join('\n');
}

/** The head of latest.md: the date, the machine (CPU, cores, kernel, Node, nginx, wrk) and the load. */
export function machineHeader(report: LoadReport): string {
  const { machine: m, settings: s } = report;
  return [
    `- Date: ${m.date}`,
    `- Machine: ${m.cpuModel}, ${m.cores} cores, Linux ${m.kernel}; Node ${m.node}; ${m.nginx ?? 'no nginx'}; ${m.wrk ?? 'no wrk'}`,
    `- Load: wrk -t${s.threads} -c${s.connections}, ${s.durationSeconds} s measured after ${s.warmupSeconds} s warm-up` +
      (s.rounds > 1 ? `, median of ${s.rounds} interleaved rounds` : ', one round') +
      (s.rowsFilter === null ? '' : `; rows: BENCH_ROWS=${s.rowsFilter}`),
    ...(report.compare === undefined ? [] : [`- Checkouts: this one ${report.compare.this.label} against ${report.compare.other.label} (${report.compare.other.root})`]),
  ].join('\n');
}

/** The markdown of bench/results/latest.md (quoted in bench/README.md), or compare-load.md. */
export function markdownReport(report: LoadReport): string {
  const twins = twinTable(report);
  return `# ${report.compare === undefined ? 'Load benchmark' : 'Load benchmark, two checkouts'}

${machineHeader(report)}

${markdownTable(report.rows)}
${twins === '' ? '' : `\n${twins}\n`}
CPU is user+sys of the target's processes (nginx: master + worker) divided by requests served;
×nginx and ×http-proxy divide it by nginx's and the bare http-proxy's of this run. Load
generator, proxy and backend share the machine, so ratios within one run are what to quote.
The Node rows run their TypeScript through tsx's loader (gatehouse too), which accounts for about
35 MB of their peak RSS and nothing per request.

${ratioSummary(report)}
`;
}

/**
 * Combines the rounds of one row: reports its median round by CPU per request among the clean
 * ones (all measured ones when none is clean). A round another process disturbed, or one the
 * machine ran slower for a while (the foreign-CPU figure does not see that), is an outlier
 * either way; the median leaves both out where "the quietest" kept the second.
 */
export function pickMedian(rounds: RowResult[]): RowResult {
  const summaries = rounds.map((r): RoundSummary => ({
    status: r.status,
    rps: r.measured?.rps ?? null,
    cpuMicrosPerRequest: r.measured?.cpuMicrosPerRequest ?? null,
    foreignCpuPercent: r.measured?.foreignCpuPercent ?? null,
  }));
  const measured = rounds.filter((r) => r.measured !== null);
  const clean = measured.filter((r) => r.status === 'ok');
  const pool = (clean.length > 0 ? clean : measured).sort((a, b) => a.measured!.cpuMicrosPerRequest - b.measured!.cpuMicrosPerRequest);
  const median = pool[(pool.length - 1) >> 1] ?? rounds[0];
  if (median === undefined) throw new Error('pickMedian: no rounds');
  return { ...median, rounds: summaries };
}
