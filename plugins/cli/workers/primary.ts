/**
 * `serve` when `server.workers` is above 1 in the primary process: start the workers
 * (supervisor.ts), turn its signals into theirs, and exit as a single process would: 0 after
 * SIGTERM or SIGINT once every worker drained, 1 when workers cannot start or keep dying, 2 when
 * a worker found the configuration wrong.
 */
import process from 'node:process';
import type { Logger } from '@gatehouse-mcp/gateway';
import { StartupError } from '@gatehouse-mcp/gateway';
import { EXIT_OK, EXIT_USAGE, InvalidConfigError } from '../exit-codes.ts';
import { stopOnSignals } from '../signals.ts';
import { sumMetricsForWorkers } from './cluster-metrics.ts';
import { WorkerStartError, WorkerSupervisor } from './supervisor.ts';

export interface PrimaryOptions {
  readonly count: number;
  readonly log: Logger;
  readonly shutdownGraceMs: number;
  /** `vmcp serve` and `registry serve` reload on SIGHUP: the primary sends it on to each worker. */
  readonly reloadable: boolean;
}

export async function serveWithWorkers(options: PrimaryOptions): Promise<void> {
  const { count, log } = options;
  const supervisor: WorkerSupervisor = new WorkerSupervisor({
    count,
    log,
    shutdownGraceMs: options.shutdownGraceMs,
    onMessage: sumMetricsForWorkers(() => supervisor.ready),
  });
  // However the primary ends (a second signal, a bug), no worker outlives it.
  process.on('exit', () => supervisor.kill());
  stopOnSignals(
    async () => {
      const code = await supervisor.stop();
      if (code !== EXIT_OK) throw new Error('a worker did not drain and exit cleanly');
    },
    log,
    options.reloadable ? () => supervisor.reload() : undefined,
  );
  log.info({ workers: count }, `starting ${count} workers on one port`);
  try {
    const url = await supervisor.start();
    log.info({ workers: count, workerPids: supervisor.pids, url }, 'every worker is ready');
  } catch (err) {
    if (!(err instanceof WorkerStartError)) throw err;
    await supervisor.stop();
    const message = `${err.message}: stopped every worker`;
    // The worker printed why; its code says whether the configuration was wrong.
    throw err.code === EXIT_USAGE ? new InvalidConfigError(message) : new StartupError(message);
  }
}
