/**
 * What a running `serve` does with signals.
 *
 * SIGTERM / SIGINT: stop (drain in-flight requests, close streams), then exit 0; a second one
 * exits at once with 1.
 * SIGHUP: conventionally "reload the configuration". Reload does not exist yet, and Node's
 * default for SIGHUP is to end the process without a word, which would take a gateway down when
 * an operator (or a tool such as a config-map reloader) asks it to reload. So it is logged and
 * otherwise ignored until reload exists.
 */
import type { Logger } from '../../core/observe/log.ts';
import { EXIT_FAILURE, EXIT_OK } from './exit-codes.ts';

export const SIGHUP_MESSAGE = 'SIGHUP received: reload is not implemented yet, restart the process to apply configuration changes';

export function stopOnSignals(stop: () => Promise<void>, log: Pick<Logger, 'info' | 'warn' | 'error' | 'flush'>): void {
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (++signals > 1) {
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
  process.on('SIGINT', shutdown);
  process.on('SIGHUP', () => log.warn({ signal: 'SIGHUP' }, SIGHUP_MESSAGE));
}
