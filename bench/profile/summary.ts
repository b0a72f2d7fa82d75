/**
 * Where a load row's CPU goes, from the main-thread profiles of its processes: self time by
 * category and by function, the folded stacks for a flame graph, and their markdown for
 * bench/results/profiles/README.md.
 *
 * Shares are of the row's busy sampled time (its samples inside the measured windows, `(idle)`
 * left out); µs/request scales a share by the CPU µs/request the harness measured for the row
 * (/proc, every thread of the process tree) in the same run. The profile holds the main thread
 * only: what V8's helper threads (concurrent GC, the compiler) spend is in the measured figure and
 * spread over the shares here, so the µs are an estimate; the shares are what to compare, between
 * profiles (profiling slows a row, so its figures are not a plain run's).
 */
import { IDLE, stacks, timePerNode, type CpuProfile, type TimeWindow } from './cpuprofile.ts';
import { categoryOf, FrameLocator, IDLE_CATEGORY } from './frames.ts';

export interface Share {
  name: string;
  micros: number;
}

export interface FunctionShare extends Share {
  category: string;
}

export interface RowProfile {
  /** Profiles read (one per process and round). */
  profiles: number;
  /** Samples inside the windows, idle ones included. */
  samples: number;
  /** Sampled time inside the windows, not idle (µs). */
  busyMicros: number;
  /** Sampled time inside the windows, waiting in the event loop (µs). */
  idleMicros: number;
  /** Self time per category, heaviest first (idle left out). */
  categories: Share[];
  /** Self time per function (`name (file:line)`), heaviest first, `top` of them. */
  functions: FunctionShare[];
  /** Stack → µs, for the folded file. */
  folded: Map<string, number>;
}

const add = (map: Map<string, number>, key: string, micros: number): void => {
  map.set(key, (map.get(key) ?? 0) + micros);
};

const heaviest = (map: ReadonlyMap<string, number>): Share[] => [...map].map(([name, micros]) => ({ name, micros })).sort((a, b) => b.micros - a.micros || (a.name < b.name ? -1 : 1));

/** The profiles of one row (each limited to `windows`, all samples when null) summed. */
export function summariseRow(profiles: readonly CpuProfile[], windows: readonly TimeWindow[] | null, root: string, top = 15): RowProfile {
  const locate = new FrameLocator(root);
  const categories = new Map<string, number>();
  const functions = new Map<string, number>();
  const categoryOfFunction = new Map<string, string>();
  const folded = new Map<string, number>();
  let samples = 0;
  let idleMicros = 0;
  for (const profile of profiles) {
    const counts = new Map<number, number>();
    const time = timePerNode(profile, windows, counts);
    for (const n of counts.values()) samples += n;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    for (const [id, micros] of time) {
      const frame = byId.get(id)?.callFrame;
      if (frame === undefined) continue;
      const category = categoryOf(frame, root);
      if (category === IDLE_CATEGORY || frame.functionName === IDLE) {
        idleMicros += micros;
        continue;
      }
      add(categories, category, micros);
      const label = locate.label(frame);
      add(functions, label, micros);
      categoryOfFunction.set(label, category);
    }
    for (const [stack, micros] of stacks(profile, time, (frame) => locate.label(frame))) add(folded, stack, micros);
  }
  const cats = heaviest(categories);
  return {
    profiles: profiles.length,
    samples,
    busyMicros: cats.reduce((sum, c) => sum + c.micros, 0),
    idleMicros,
    categories: cats,
    functions: heaviest(functions)
      .slice(0, top)
      .map((f) => ({ ...f, category: categoryOfFunction.get(f.name) ?? 'other' })),
    folded,
  };
}

/** The figures of the row from the same run, to scale the shares by. */
export interface RowFigures {
  name: string;
  cpuMicrosPerRequest: number | null;
  cpuVsNginx: number | null;
  cpuVsHttpProxy: number | null;
  /** Other processes' share of the machine during the row's reported round (%). */
  foreignCpuPercent: number | null;
}

const fixed = (n: number | null | undefined, digits: number): string => (n === null || n === undefined || !Number.isFinite(n) ? '—' : n.toFixed(digits));
const cell = (s: string): string => s.replace(/\|/g, '\\|');

/** The markdown section of one row: its figures, self time by category, the top functions. */
export function rowMarkdown(row: RowProfile, figures: RowFigures, foldedFile: string): string {
  const perRequest = (micros: number): number | null =>
    figures.cpuMicrosPerRequest === null || row.busyMicros === 0 ? null : (micros / row.busyMicros) * figures.cpuMicrosPerRequest;
  const percent = (micros: number): string => fixed(row.busyMicros === 0 ? null : (100 * micros) / row.busyMicros, 1);
  const wall = row.busyMicros + row.idleMicros;
  const out = [
    `### ${figures.name}`,
    '',
    `CPU ${fixed(figures.cpuMicrosPerRequest, 1)} µs/request, ×nginx ${fixed(figures.cpuVsNginx, 2)}, ×http-proxy ${fixed(figures.cpuVsHttpProxy, 2)}` +
      ` (other processes ${fixed(figures.foreignCpuPercent, 0)} % of the machine).` +
      ` Main thread: ${row.samples} samples in ${row.profiles} profile${row.profiles === 1 ? '' : 's'},` +
      ` busy ${fixed(row.busyMicros / 1000, 0)} ms, idle ${fixed(wall === 0 ? null : (100 * row.idleMicros) / wall, 0)} % of the measured time.` +
      ` Flame graph: [\`${foldedFile}\`](${foldedFile}).`,
    '',
    '| self time in | % | µs/req |',
    '|---|---:|---:|',
    ...row.categories.map((c) => `| ${cell(c.name)} | ${percent(c.micros)} | ${fixed(perRequest(c.micros), 1)} |`),
    '',
    `| top functions by self time | category | % | µs/req |`,
    '|---|---|---:|---:|',
    ...row.functions.map((f) => `| \`${cell(f.name)}\` | ${cell(f.category)} | ${percent(f.micros)} | ${fixed(perRequest(f.micros), 2)} |`),
  ];
  return out.join('\n');
}
