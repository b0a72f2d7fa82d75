/**
 * Command-line options shared by the `serve` and `validate` commands of every system.
 */
import { parseArgs } from 'node:util';
import type { LevelWithSilent } from 'pino';
import { StartupError } from '../../core/errors.ts';
import { LOG_LEVELS } from '../../core/observe/log.ts';

/** The command line itself is wrong (exit code 2, with the usage). */
export class UsageError extends StartupError {}

export interface CommandOptions {
  config: string;
  host: string;
  port: number;
  logLevel: LevelWithSilent;
}

export function parseCommandOptions(args: string[], defaultPort: number): CommandOptions {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: String(defaultPort) },
      'log-level': { type: 'string', default: 'info' },
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  if (values.config === undefined) throw new UsageError('--config FILE is required');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port "${values.port}" is not a port number`);
  const level = values['log-level'] as LevelWithSilent;
  if (!LOG_LEVELS.includes(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  return { config: values.config, host: values.host!, port, logLevel: level };
}

/** Prints `message` to stderr and exits with `code`. */
export function exitWith(message: string, code = 1): never {
  process.stderr.write(message.endsWith('\n') ? message : message + '\n');
  process.exit(code);
}

/** Explains a listen failure in one line, or returns null when it is something else. */
function listenProblem(err: unknown, host: string, port: number): string | null {
  const code = (err as { code?: string }).code;
  if (code === 'EADDRINUSE') return `cannot listen on ${host}:${port}: the address is already in use`;
  if (code === 'EACCES' || code === 'EADDRNOTAVAIL') return `cannot listen on ${host}:${port}: ${(err as Error).message}`;
  return null;
}

/**
 * A failed start: a StartupError or a listen failure is printed as it is (no stack trace) and
 * the process exits 1; anything else is a bug and is rethrown.
 */
export function exitOnStartFailure(err: unknown, options: Pick<CommandOptions, 'host' | 'port'>): never {
  if (err instanceof StartupError) exitWith(err.message);
  const problem = listenProblem(err, options.host, options.port);
  if (problem !== null) exitWith(problem);
  throw err;
}

/**
 * SIGTERM / SIGINT: stop (drain in-flight requests, close streams), then exit 0. A second signal
 * exits at once with 1.
 */
export function stopOnSignals(stop: () => Promise<void>, log: { info(o: object, m?: string): void; warn(o: object, m?: string): void; error(o: object, m?: string): void; flush(): void }): void {
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (++signals > 1) {
      log.warn({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    log.info({ signal }, 'shutting down: draining in-flight requests');
    stop().then(
      () => {
        log.info({}, 'stopped');
        log.flush();
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
