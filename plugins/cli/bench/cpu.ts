/**
 * CPU time of a process and its descendants, from /proc (Linux): utime + stime of
 * /proc/<pid>/stat, which cover every thread of the process (the event loop, libuv's pool,
 * V8's GC and compiler threads). In clock ticks (`getconf CLK_TCK`, usually 100: 10 ms), so a
 * measured run of several seconds keeps the rounding well under 1 %. Elsewhere: null.
 * The repository's own benchmarks (bench/load/cpu.ts) read /proc through the same functions.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import process from 'node:process';

let ticksPerSecond: number | undefined;

/** Clock ticks per second of /proc/<pid>/stat times. */
export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      const n = Number.parseInt(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim(), 10);
      ticksPerSecond = Number.isFinite(n) && n > 0 ? n : 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

export interface ProcStat {
  readonly ppid: number;
  /** utime + stime, in clock ticks. */
  readonly ticks: number;
  /** cutime + cstime: the CPU of exited children this process has waited for. */
  readonly childTicks: number;
}

/** What /proc/<pid>/stat says of a pid, or undefined when it is gone. */
export function stat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2, the command, is in parentheses and may hold spaces: fields are counted after it.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), childTicks: Number(fields[13]) + Number(fields[14]) };
}

export const cpuAvailable = (): boolean => process.platform === 'linux' && existsSync('/proc/self/stat');

/** The `roots` and their live descendants. */
export function tree(...roots: number[]): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const s = stat(pid);
    if (s === undefined) continue;
    const list = children.get(s.ppid);
    if (list === undefined) children.set(s.ppid, [pid]);
    else list.push(pid);
  }
  const out: number[] = [];
  const seen = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

export type CpuSnapshot = ReadonlyMap<number, number>;

/** CPU ticks of each process of `root`'s tree now, or null where /proc is not there. */
export function cpuSnapshot(root: number): CpuSnapshot | null {
  if (!cpuAvailable()) return null;
  const snapshot = new Map<number, number>();
  for (const pid of tree(root)) {
    const s = stat(pid);
    if (s !== undefined) snapshot.set(pid, s.ticks);
  }
  return snapshot;
}

/** CPU µs spent between two snapshots (a process new in `after` counts from zero). */
export function cpuMicrosBetween(before: CpuSnapshot | null, after: CpuSnapshot | null): number | null {
  if (before === null || after === null) return null;
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
  return (ticks * 1_000_000) / clockTicks();
}

/**
 * CPU ticks of every user-space process on the machine now (kernel threads left out: the
 * loopback traffic of the run itself is partly handled by them), or null where /proc is not there.
 */
export function everyProcess(): CpuSnapshot | null {
  if (!cpuAvailable()) return null;
  const snapshot = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === 2) continue;
    const s = stat(pid);
    if (s !== undefined && s.ppid !== 2) snapshot.set(pid, s.ticks);
  }
  return snapshot;
}

/** CPU µs spent between two `everyProcess` snapshots by the processes not in `except` (nor their descendants at the end). */
export function otherMicrosBetween(before: CpuSnapshot | null, after: CpuSnapshot | null, except: readonly number[]): number | null {
  if (before === null || after === null) return null;
  const mine = new Set(except.flatMap((pid) => tree(pid)));
  let ticks = 0;
  for (const [pid, t] of after) if (!mine.has(pid)) ticks += t - (before.get(pid) ?? 0);
  return (ticks * 1_000_000) / clockTicks();
}
