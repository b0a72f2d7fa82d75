/**
 * What a running `serve` does with signals.
 *
 * SIGTERM / SIGINT: stop (drain in-flight requests, close streams), then exit 0; a second one
 * exits at once with 1.
 * SIGHUP: reload the configuration (`vmcp serve`: reload.ts). A server that cannot reload
 * (`registry serve`) logs it and goes on: Node's default for SIGHUP is to end the process
 * without a word, which would take a gateway down when an operator (or a tool such as a
 * config-map reloader) asks it to reload.
 *
 * A worker of `server.workers` (workers/worker.ts) ignores SIGINT, and every stop signal after
 * its first: its primary turns its own SIGINT into a SIGTERM for each worker, and a stop signal
 * may reach a worker both from whoever sent it to every process (Ctrl-C to the terminal's group,
 * systemd's control-group kill) and from the primary. The primary is the one that gives up on a
 * drain (it kills the worker).
 */
import process from 'node:process';
import type { Logger } from '@gatehouse-mcp/gateway';
import { EXIT_FAILURE, EXIT_OK } from './exit-codes.ts';

export const SIGHUP_MESSAGE = 'SIGHUP received: reload is not implemented for this server, restart the process to apply configuration changes';

export function stopOnSignals(stop: () => Promise<void>, log: Pick<Logger, 'info' | 'warn' | 'error' | 'flush'>, reload?: () => void, options: { worker?: boolean } = {}): void {
  let signals = 0;
  const worker = options.worker === true;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (++signals > 1) {
      if (worker) return;
      log.warn({ signal }, 'second signal: exiting at once');
      log.flush();
      process.exit(EXIT_FAILURE);
    }
    log.info({ signal }, 'shutting down: draining in-flight requests');
    stop().then(
      () => {
        log.info({}, 'stopped');
        log.flush();
        process.exit(EXIT_OK);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        log.flush();
        process.exit(EXIT_FAILURE);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', worker ? () => {} : shutdown);
  process.on('SIGHUP', () => {
    if (signals > 0) return; // stopping: nothing to reload
    if (reload === undefined) log.warn({ signal: 'SIGHUP' }, SIGHUP_MESSAGE);
    else reload();
  });
}
