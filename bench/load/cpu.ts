/**
 * CPU and memory accounting of the processes under test, from /proc (Linux only).
 *
 * - CPU: utime + stime (fields 14 and 15 of /proc/<pid>/stat), in clock ticks (`getconf
 *   CLK_TCK`, usually 100, so 10 ms resolution: measured runs of several seconds keep the
 *   rounding error well under 1%). They cover every thread of the process (libuv pool, V8
 *   GC and compiler threads), live or exited.
 * - A target names root pids; accounting covers the roots and all their descendants found at
 *   snapshot time (nginx master + worker; a gateway that re-executes itself).
 * - Peak RSS: VmHWM of /proc/<pid>/status, summed over the process tree.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let clkTck: number | undefined;

/** Clock ticks per second of /proc/<pid>/stat times. */
export function clockTicksPerSecond(): number {
  if (clkTck === undefined) {
    try {
      const n = Number.parseInt(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim(), 10);
      clkTck = Number.isFinite(n) && n > 0 ? n : 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

interface ProcStat {
  ppid: number;
  /** utime + stime in clock ticks */
  ticks: number;
  /** cutime + cstime: CPU of exited children this process has waited for */
  childTicks: number;
}

/** Parses /proc/<pid>/stat; undefined when the process is gone. */
function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may itself contain spaces or ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): field N is fields[N - 3].
  const ppid = Number(fields[1]);
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return { ppid, ticks: utime + stime, childTicks: Number(fields[13]) + Number(fields[14]) };
}

/** The roots and all their live descendants. */
export function processTree(roots: readonly number[]): number[] {
  const byParent = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const st = readStat(pid);
    if (st === undefined) continue;
    const list = byParent.get(st.ppid);
    if (list === undefined) byParent.set(st.ppid, [pid]);
    else list.push(pid);
  }
  const out: number[] = [];
  const queue = [...roots];
  const seen = new Set<number>();
  while (queue.length > 0) {
    const pid = queue.shift();
    if (pid === undefined || seen.has(pid)) continue;
    seen.add(pid);
    out.push(pid);
    queue.push(...(byParent.get(pid) ?? []));
  }
  return out;
}

/** CPU ticks per pid of a process tree at one instant. */
export type CpuSnapshot = ReadonlyMap<number, number>;

export function cpuSnapshot(roots: readonly number[]): CpuSnapshot {
  const snap = new Map<number, number>();
  for (const pid of processTree(roots)) {
    const st = readStat(pid);
    if (st !== undefined) snap.set(pid, st.ticks);
  }
  return snap;
}

/** CPU time in µs spent between two snapshots (a process new in `after` counts from zero). */
export function cpuDeltaMicros(before: CpuSnapshot, after: CpuSnapshot): number {
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
  return (ticks * 1_000_000) / clockTicksPerSecond();
}

/** Sum of VmHWM (peak resident set) over a process tree, in KiB. */
export function peakRssKiB(roots: readonly number[]): number {
  let kib = 0;
  for (const pid of processTree(roots)) {
    try {
      const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m?.[1] !== undefined) kib += Number(m[1]);
    } catch {
      /* process gone */
    }
  }
  return kib;
}

/** Busy CPU time of the whole machine (all cores; /proc/stat), in µs. */
export function machineBusyMicros(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  const ticks = (user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0);
  return (ticks * 1_000_000) / clockTicksPerSecond();
}

/**
 * CPU time used so far by this process, its live descendants, and the exited children it has
 * reaped (wrk runs), in µs: with `machineBusyMicros` it tells how much CPU other processes on
 * the machine took during a run.
 */
export function ownTreeMicros(): number {
  let ticks = readStat(process.pid)?.childTicks ?? 0;
  for (const pid of processTree([process.pid])) ticks += readStat(pid)?.ticks ?? 0;
  return (ticks * 1_000_000) / clockTicksPerSecond();
}
