/**
 * Signals to a child's process group. A stdio backend is started as the leader of a group of its
 * own (`detached`), so what it starts (`npx` → `node server`, a shell's pipeline) is in the group
 * too, and is ended with it by one signal to the group.
 */
import process from 'node:process';

/**
 * Sends `signal` (0: none, a check) to every process of group `pgid`. Returns false when the
 * group has no process left (ESRCH); true when it has some, even one this user may not signal.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  // -0 would be the gateway's own group and -1 every process it may signal: never.
  if (!Number.isSafeInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
