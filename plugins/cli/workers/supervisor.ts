/**
 * The primary process of `server.workers` > 1: it serves nothing itself. It starts N workers with
 * node:cluster, each the same `gatehouse ... serve` command line (cluster.fork runs this
 * process's script and arguments again), which listen on one port: the primary accepts the
 * connections and hands them round robin to the workers (cluster's default on Linux).
 *
 * - Start: ready once every worker has said so (worker.ts); a worker that ends before that fails
 *   the start: the others are stopped and the primary exits with that worker's code (2 for a
 *   configuration problem, else 1), after the worker printed why.
 * - A worker that dies later is logged and started again with the restart policy's delay; a
 *   crash loop (restart-policy.ts) stops every worker and exits 1.
 * - SIGTERM / SIGINT: each worker gets SIGTERM and drains as a single process does (within
 *   `server.shutdownGracePeriod`); the primary exits 0 once they all exited 0, else 1. One that
 *   outlives the grace period and a margin is killed. A second signal kills them all at once, 1.
 * - SIGHUP: sent on to every worker, which reloads its file as a single process does.
 *
 * A worker whose primary is gone (killed with SIGKILL) exits: node:cluster ends a worker whose
 * channel to the primary closes, so no worker outlives it.
 */
import cluster, { type Worker } from 'node:cluster';
import process from 'node:process';
import type { Logger } from '@gatehouse-mcp/gateway';
import { EXIT_FAILURE, EXIT_OK } from '../exit-codes.ts';
import { RestartPolicy } from './restart-policy.ts';
import { isReadyMessage, workerEnv } from './worker.ts';

/** Time a worker has past the shutdown grace period to exit (its stdio children's stop grace, its last writes). */
const STOP_MARGIN_MS = 10_000;

export interface SupervisorOptions {
  readonly count: number;
  readonly log: Logger;
  /** `server.shutdownGracePeriod`: how long a worker's drain may take. */
  readonly shutdownGraceMs: number;
  readonly policy?: RestartPolicy;
  /** Every other message of a worker (cluster-metrics.ts). */
  readonly onMessage?: (worker: Worker, message: unknown) => void;
}

interface Slot {
  readonly index: number;
  worker: Worker | null;
  startedAt: number;
  ready: boolean;
  restart: NodeJS.Timeout | null;
}

export class WorkerSupervisor {
  readonly #options: SupervisorOptions;
  readonly #log: Logger;
  readonly #policy: RestartPolicy;
  readonly #slots: Slot[];
  #starting: { resolve(url: string): void; reject(err: WorkerStartError): void } | null = null;
  /** Where the workers listen, as the first to be ready said. */
  #url = '';
  #stopping: Promise<number> | null = null;

  constructor(options: SupervisorOptions) {
    this.#options = options;
    this.#log = options.log;
    this.#policy = options.policy ?? new RestartPolicy();
    this.#slots = Array.from({ length: options.count }, (_, index) => ({ index, worker: null, startedAt: 0, ready: false, restart: null }));
  }

  /** Starts every worker; resolves once all are ready (with where they listen), rejects when one ends before. */
  start(): Promise<string> {
    const started = new Promise<string>((resolve, reject) => (this.#starting = { resolve, reject }));
    for (const slot of this.#slots) this.#fork(slot);
    return started;
  }

  /** The workers that are ready now. */
  get ready(): Worker[] {
    return this.#slots.flatMap((slot) => (slot.ready && slot.worker !== null ? [slot.worker] : []));
  }

  /** The pids of the workers running now, by slot (null: being started again). */
  get pids(): (number | null)[] {
    return this.#slots.map((slot) => slot.worker?.process.pid ?? null);
  }

  /**
   * SIGHUP to every worker that is ready: each reloads its file. One still starting reads the
   * file as it is anyway, and may not handle the signal yet (Node's default for SIGHUP ends it).
   */
  reload(): void {
    if (this.#stopping !== null) return;
    for (const worker of this.ready) worker.process.kill('SIGHUP');
  }

  /** SIGTERM to every worker, then the exit code: 0 when every one drained and exited 0. */
  stop(): Promise<number> {
    this.#stopping ??= this.#stopAll();
    return this.#stopping;
  }

  /** A second stop signal: every worker is killed at once. */
  kill(): void {
    for (const slot of this.#slots) slot.worker?.process.kill('SIGKILL');
  }

  #fork(slot: Slot): void {
    slot.restart = null;
    slot.ready = false;
    slot.startedAt = Date.now();
    const worker = cluster.fork(workerEnv(process.env, slot.index));
    slot.worker = worker;
    worker.on('message', (message: unknown) => {
      if (!isReadyMessage(message)) return this.#options.onMessage?.(worker, message);
      if (this.#url === '') this.#url = message.url;
      this.#ready(slot, worker);
    });
    worker.on('exit', (code, signal) => this.#exited(slot, worker, code, signal));
  }

  #ready(slot: Slot, worker: Worker): void {
    if (slot.worker !== worker) return;
    slot.ready = true;
    const starting = this.#starting;
    if (starting !== null) {
      if (this.#slots.every((s) => s.ready)) {
        this.#starting = null;
        starting.resolve(this.#url);
      }
    } else {
      this.#log.info({ slot: slot.index, workerPid: worker.process.pid }, 'worker started again and ready');
    }
  }

  #exited(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker !== worker) return;
    slot.worker = null;
    const how = { slot: slot.index, workerPid: worker.process.pid, code, signal };
    if (this.#stopping !== null) return;
    const starting = this.#starting;
    if (starting !== null) {
      this.#starting = null;
      starting.reject(new WorkerStartError(how, code));
      return;
    }
    const upMs = Date.now() - slot.startedAt;
    const decision = this.#policy.died(slot.index, upMs, Date.now());
    if (!decision.restart) {
      this.#log.error({ ...how }, `worker exited: ${decision.reason}, stopping every worker`);
      void this.stop().then(() => {
        this.#log.flush();
        process.exit(EXIT_FAILURE);
      });
      return;
    }
    this.#log.error({ ...how, upMs, restartInMs: decision.delayMs }, `worker exited ${signal === null ? `with code ${code}` : `on ${signal}`}: starting it again in ${decision.delayMs} ms`);
    slot.restart = setTimeout(() => this.#fork(slot), decision.delayMs);
  }

  async #stopAll(): Promise<number> {
    const exits: Promise<number | null>[] = [];
    for (const slot of this.#slots) {
      if (slot.restart !== null) clearTimeout(slot.restart);
      slot.restart = null;
      const worker = slot.worker;
      if (worker === null) continue;
      // One still starting has served nothing and may not handle the signal yet: how it ends says nothing of a drain.
      exits.push(slot.ready ? exitOf(worker) : exitOf(worker).then(() => EXIT_OK));
      worker.process.kill('SIGTERM');
    }
    const deadline = setTimeout(() => {
      this.#log.error({ afterMs: this.#options.shutdownGraceMs + STOP_MARGIN_MS }, 'workers still running past the shutdown grace period: killing them');
      this.kill();
    }, this.#options.shutdownGraceMs + STOP_MARGIN_MS);
    const codes = await Promise.all(exits);
    clearTimeout(deadline);
    return codes.every((code) => code === EXIT_OK) ? EXIT_OK : EXIT_FAILURE;
  }
}

/** The exit code of `worker` once it exited (null: killed by a signal). */
function exitOf(worker: Worker): Promise<number | null> {
  if (worker.process.exitCode !== null || worker.process.signalCode !== null) return Promise.resolve(worker.process.exitCode);
  return new Promise((resolve) => worker.once('exit', (code: number | null, signal: string | null) => resolve(signal === null ? code : null)));
}

/** A worker ended before it was ready: the start failed. */
export class WorkerStartError extends Error {
  /** The worker's exit code (null: killed by a signal). */
  readonly code: number | null;

  constructor(how: { slot: number; workerPid: number | undefined; code: number | null; signal: string | null }, code: number | null) {
    super(`worker ${how.slot} (pid ${how.workerPid}) ended before it was ready (${how.signal === null ? `exit code ${how.code}` : how.signal})`);
    this.code = code;
  }
}
