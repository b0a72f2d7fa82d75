/**
 * What `vmcp serve` and `registry serve` share: refuse a bad file before starting anything,
 * log in the format asked for, explain a failed start in one line (start-failure.ts), then run
 * until a signal; SIGHUP (and with `--watch-config` a change of the file) reloads a server that
 * can (reload.ts). With `server.workers` above 1 this process becomes the primary of that many
 * workers (workers/primary.ts), each of which runs this same function as a single process does.
 */
import { createLogger, defaultLogFormat, formatProblems, GatewayMetrics, type Logger, type ServerSettings, type Validation } from '@gatehouse-mcp/gateway';
import { InvalidConfigError } from './exit-codes.ts';
import type { ServeOptions, ValidateOptions } from './options.ts';
import { watchConfig, type ReloadTrigger } from './reload.ts';
import { stopOnSignals } from './signals.ts';
import { asStartupError } from './start-failure.ts';
import { shareMetrics } from './workers/cluster-metrics.ts';
import { serveWithWorkers } from './workers/primary.ts';
import { isWorker, tellReady, workerCount } from './workers/worker.ts';

/** How a worker of `server.workers` starts its server. */
export interface WorkerStart {
  /** Its metrics, whose scrapes answer every worker's (workers/cluster-metrics.ts). */
  readonly metrics: GatewayMetrics;
  /** Listen once everything has started: the primary hands a worker connections from its listen on. */
  readonly listenLast: true;
}

export interface Running {
  /** Where it serves (the MCP endpoint, or the registry's base URL). */
  readonly url: string;
  stop(): Promise<void>;
  /** Re-reads the file and applies it (never rejects); absent: the server cannot reload. */
  reload?(trigger: ReloadTrigger): Promise<void>;
}

/** The resolved configuration of `--config`, or an InvalidConfigError listing every problem. */
export async function loadConfig<C>(options: ValidateOptions, validateFile: (file: string) => Promise<Validation<C>>): Promise<C> {
  const result = await validateFile(options.config);
  if (!result.ok) throw new InvalidConfigError(formatProblems(result.problems));
  return result.config;
}

export async function serve<C extends { readonly server: ServerSettings }>(
  options: ServeOptions,
  validateFile: (file: string) => Promise<Validation<C>>,
  /** `worker`: set in a worker of `server.workers` (what its server must be started with), else null. */
  start: (config: C, log: Logger, worker: WorkerStart | null) => Promise<Running>,
  reloadable = false,
  /** What several workers cost this configuration, logged by the primary (workers/vmcp-warnings.ts). */
  workerWarnings: (config: C, workers: number) => string[] = () => [],
): Promise<void> {
  const config = await loadConfig(options, validateFile);
  const log = createLogger(options.logLevel, options.logFormat ?? defaultLogFormat());
  const worker = isWorker();
  const workers = worker ? 1 : workerCount(config.server.workers);
  if (workers > 1) {
    for (const warning of workerWarnings(config, workers)) log.warn({ workers }, warning);
    return serveWithWorkers({ count: workers, log, shutdownGraceMs: config.server.shutdownGraceMs, reloadable });
  }
  let watcher: { close(): void } | null = null;
  const starting = start(config, log, worker ? { metrics: workerMetrics(), listenLast: true } : null);
  const reload = (trigger: ReloadTrigger): void => {
    void starting.then(
      (running) => running.reload?.(trigger),
      () => {},
    );
  };
  // Before the start ends: "listening" is logged within it, and a SIGTERM that follows that line
  // at once must drain and exit 0 like any other, not kill the process (Node's default).
  stopOnSignals(
    () =>
      starting.then((running) => {
        watcher?.close();
        return running.stop();
      }),
    log,
    reloadable ? () => reload('SIGHUP') : undefined,
    { worker },
  );
  let running: Running;
  try {
    running = await starting;
  } catch (err) {
    throw asStartupError(err, options);
  }
  if (worker) tellReady(running.url);
  if (reloadable && options.watchConfig === true) {
    watcher = watchConfig(options.config, () => reload('file watch'), log);
    log.info({ file: options.config }, 'watching the configuration file: a change reloads it');
  }
}

/** A worker's metrics: its part of the sum, and its scrapes answer the sum. */
function workerMetrics(): GatewayMetrics {
  const metrics = new GatewayMetrics();
  shareMetrics(metrics.registry);
  return metrics;
}
