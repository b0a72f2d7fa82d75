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
 *
 * /proc/<pid>/stat is read by `gatehouse bench`'s own accounting (plugins/cli/bench/cpu.ts):
 * one parser for both.
 */
import { readFileSync } from 'node:fs';
import { clockTicks, stat as readStat, tree } from '../../plugins/cli/bench/cpu.ts';

/** Clock ticks per second of /proc/<pid>/stat times. */
export const clockTicksPerSecond = clockTicks;

/** The roots and all their live descendants. */
export function processTree(roots: readonly number[]): number[] {
  return tree(...roots);
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
