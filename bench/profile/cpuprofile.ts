/**
 * A V8 CPU profile (`.cpuprofile`, what `node --cpu-prof` writes) as time per call-tree node.
 *
 * The format: `nodes[]` (id, callFrame {functionName, url, lineNumber, columnNumber}, hitCount,
 * children[] ids), `samples[]` (a node id per sample: the stack's leaf, the function running
 * then) and `timeDeltas[]` (µs from the sample before; the first from `startTime`). Sample i is
 * taken at startTime + Σ timeDeltas[0..i] and lasts until the next one (the last one until
 * `endTime`): its duration is the time it stands for. hitCount alone would weigh every sample
 * the same, while the sampler's interval stretches when the machine is busy.
 *
 * Timestamps are V8's monotonic clock in µs, the clock of `process.hrtime` on Linux
 * (CLOCK_MONOTONIC), so a window the harness took with `process.hrtime.bigint()` (the measured
 * run, without start-up and warm-up) selects the samples taken during it.
 *
 * The sampler runs on wall-clock time: a sample of a thread that was preempted counts for the
 * function it was in (the README says so), and `(idle)` is the thread waiting in the event loop.
 */
import { readFileSync } from 'node:fs';

export interface CallFrame {
  functionName: string;
  url: string;
  /** 0-based, of the code V8 ran (for TypeScript run through tsx: the transpiled code). */
  lineNumber: number;
  columnNumber: number;
  scriptId?: string;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A time range in V8's (and process.hrtime's) monotonic µs. */
export interface TimeWindow {
  startMicros: number;
  endMicros: number;
}

export function readCpuProfile(path: string): CpuProfile {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<CpuProfile>;
  if (!Array.isArray(parsed.nodes) || !Array.isArray(parsed.samples) || !Array.isArray(parsed.timeDeltas) || typeof parsed.startTime !== 'number') {
    throw new Error(`${path}: not a V8 CPU profile (nodes, samples, timeDeltas, startTime)`);
  }
  return parsed as CpuProfile;
}

/** The pseudo-frames V8 adds: the root of the tree, and the thread waiting for work. */
export const ROOT = '(root)';
export const IDLE = '(idle)';

/**
 * Sampled time (µs) per node id: the samples taken inside one of `windows` (all of them when
 * null), each standing for the time until the next sample. `counts`, when given, gets the
 * number of those samples per node id.
 */
export function timePerNode(profile: CpuProfile, windows: readonly TimeWindow[] | null, counts?: Map<number, number>): Map<number, number> {
  const out = new Map<number, number>();
  const { samples, timeDeltas } = profile;
  let at = profile.startTime + (timeDeltas[0] ?? 0);
  for (let i = 0; i < samples.length; i++) {
    const next = i + 1 < samples.length ? at + (timeDeltas[i + 1] ?? 0) : Math.max(at, profile.endTime);
    const inside = windows === null || windows.some((w) => at >= w.startMicros && at < w.endMicros);
    if (inside) {
      const id = samples[i]!;
      out.set(id, (out.get(id) ?? 0) + Math.max(0, next - at));
      counts?.set(id, (counts.get(id) ?? 0) + 1);
    }
    at = next;
  }
  return out;
}

/** Each node's parent id (the root has none). */
export function parents(profile: CpuProfile): Map<number, number> {
  const out = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) out.set(child, node.id);
  return out;
}

/**
 * The stacks of `profile` with their time: root first, leaf last, without `(root)`; `(idle)`
 * left out (not CPU). `label` names a frame; stacks that name the same frames add up.
 */
export function stacks(profile: CpuProfile, time: ReadonlyMap<number, number>, label: (frame: CallFrame) => string): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const up = parents(profile);
  const out = new Map<string, number>();
  for (const [id, micros] of time) {
    const leaf = byId.get(id);
    if (leaf === undefined || micros <= 0 || leaf.callFrame.functionName === IDLE) continue;
    const frames: string[] = [];
    for (let node: ProfileNode | undefined = leaf; node !== undefined; node = byId.get(up.get(node.id) ?? -1)) {
      if (node.callFrame.functionName !== ROOT) frames.push(label(node.callFrame));
    }
    const key = frames.reverse().join(';');
    out.set(key, (out.get(key) ?? 0) + micros);
  }
  return out;
}

/**
 * Folded stacks, the text flamegraph.pl, inferno and speedscope read: one line per stack,
 * `frame;frame;frame value`, heaviest first. Stacks under `minMicros` are folded into their
 * parent stack (what a flame graph would draw too thin to read), so the file stays small and
 * every microsecond stays counted.
 */
export function foldedText(folded: ReadonlyMap<string, number>, minMicros = 0): string {
  const kept = new Map<string, number>();
  for (const [stack, micros] of folded) {
    let key = stack;
    // An "(other)" leaf under the parent: its frames are too small to draw.
    if (micros < minMicros) {
      const cut = stack.lastIndexOf(';');
      key = cut === -1 ? '(other)' : `${stack.slice(0, cut)};(other)`;
    }
    kept.set(key, (kept.get(key) ?? 0) + micros);
  }
  return [...kept]
    .map(([stack, micros]) => [stack, Math.round(micros)] as const)
    .filter(([, micros]) => micros > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([stack, micros]) => `${stack} ${micros}`)
    .join('\n');
}
