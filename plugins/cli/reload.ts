/**
 * Reloading a running `vmcp serve` from its file: on SIGHUP, and with `--watch-config` when the
 * file changes. The file is validated as at start; one with problems is refused with every
 * problem logged (file:line:col and YAML path), and the running configuration keeps serving.
 * What a valid one changes is applied by RunningVmcp.reload (core/vmcp/virtual-mcp-server.ts), which
 * refuses, as a whole, a change that needs a restart.
 *
 * Reloads never overlap: a request that comes while one runs is remembered, and one more reload
 * runs after it (several requests meanwhile make that one reload), reading the file as it is then.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { formatProblem, type Logger, type Validation } from '@gatehouse-mcp/gateway';

export type ReloadTrigger = 'SIGHUP' | 'file watch';

/**
 * `run` at most once at a time: calls while it runs coalesce into one more run after it. The
 * promise of a call that started a run resolves after that run and those it coalesced; a call
 * that was coalesced resolves at once.
 */
export function coalesce(run: (trigger: ReloadTrigger) => Promise<void>): (trigger: ReloadTrigger) => Promise<void> {
  let running = false;
  let pending: ReloadTrigger | null = null;
  return async (trigger) => {
    if (running) {
      pending = trigger;
      return;
    }
    running = true;
    try {
      for (let next: ReloadTrigger | null = trigger; next !== null; next = pending) {
        pending = null;
        await run(next).catch(() => {});
      }
    } finally {
      running = false;
    }
  };
}

/**
 * The reload of a file: validate it, log its problems or hand the configuration to `apply`.
 * Never rejects.
 */
export function fileReload<C>(
  file: string,
  validateFile: (file: string) => Promise<Validation<C>>,
  apply: (config: C) => Promise<unknown>,
  log: Pick<Logger, 'info' | 'error'>,
): (trigger: ReloadTrigger) => Promise<void> {
  return coalesce(async (trigger) => {
    log.info({ trigger, file }, 'reload started');
    let result: Validation<C>;
    try {
      result = await validateFile(file);
    } catch (err) {
      log.error({ err, file }, 'reload refused: the configuration file could not be read; the running configuration keeps serving');
      return;
    }
    if (!result.ok) {
      for (const problem of result.problems) log.error({ file, problem: formatProblem(problem) }, `reload refused: ${formatProblem(problem)}`);
      log.error({ file, problems: result.problems.length }, `reload refused: the configuration has ${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}; the running configuration keeps serving`);
      return;
    }
    await apply(result.config);
  });
}

const SETTLE_MS = 200;

/**
 * Calls `onChange` when `file` changes, once writes have settled. The directory is watched, not
 * the file: editors and Kubernetes config maps replace a file (a rename, a symlink swapped)
 * rather than write it in place, and a watch on the file itself would follow the old inode.
 */
export function watchConfig(file: string, onChange: () => void, log: Pick<Logger, 'warn'>): { close(): void } {
  const name = basename(file);
  let timer: NodeJS.Timeout | null = null;
  let watcher: FSWatcher;
  try {
    watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
      // null: the platform does not say which; `..data`: a config map's symlink swap.
      if (changed !== null && changed !== name && changed !== '..data') return;
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        onChange();
      }, SETTLE_MS);
    });
  } catch (err) {
    log.warn({ err, file }, '--watch-config: the directory of the configuration cannot be watched; SIGHUP still reloads');
    return { close() {} };
  }
  watcher.on('error', (err) => log.warn({ err, file }, '--watch-config: watching the configuration failed; SIGHUP still reloads'));
  return {
    close() {
      if (timer !== null) clearTimeout(timer);
      watcher.close();
    },
  };
}
