/**
 * The worker's side of `server.workers` > 1: a worker runs `serve` as a single process does,
 * and tells the primary (supervisor.ts) over cluster's channel once it serves. What it does with
 * signals differs (signals.ts): SIGINT is ignored, and so is every stop signal after the first.
 * Ctrl-C at a terminal reaches every process of the group, and systemd stops a service by
 * signalling every process of it: the primary then sends each worker SIGTERM as well, which a
 * worker must not take for a second signal (exit at once, without draining). A SIGTERM sent to
 * one worker alone drains it, and the primary starts it again: a graceful restart of that worker.
 */
import cluster from 'node:cluster';
import { availableParallelism, hostname } from 'node:os';
import process from 'node:process';
import type { WorkersSetting } from '@gatehouse-mcp/gateway';

const READY = 'gatehouse:worker-ready';

/** What a worker sends when it serves. */
interface ReadyMessage {
  readonly type: typeof READY;
  /** Where it listens (the same for every worker). */
  readonly url: string;
}

export function isReadyMessage(message: unknown): message is ReadyMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === READY;
}

/** Whether this process is a worker of a primary (node:cluster). */
export function isWorker(): boolean {
  return cluster.isWorker;
}

/** Tells the primary this worker serves at `url`. */
export function tellReady(url: string): void {
  const message: ReadyMessage = { type: READY, url };
  process.send?.(message);
}

/** How many workers `server.workers` means on this machine: `auto` is one per core this process may use. */
export function workerCount(setting: WorkersSetting): number {
  return setting === 'auto' ? availableParallelism() : setting;
}

const INSTANCE = 'service.instance.id';

/**
 * The environment a worker is started with: OpenTelemetry's `service.instance.id` its own
 * (`<the one set, else host-primary pid>-worker-<slot>`) in `OTEL_RESOURCE_ATTRIBUTES`. The
 * workers of one gateway have the same service name and resource otherwise, and OTLP metrics
 * (`telemetry.metricsEnabled`) pushed by two processes under one resource would be read as one
 * series whose counters jump between them. A worker started again in the same slot has the same
 * id, as a process restarted.
 */
export function workerEnv(env: NodeJS.ProcessEnv, slot: number, primaryPid: number = process.pid): Record<string, string> {
  const pairs = (env['OTEL_RESOURCE_ATTRIBUTES'] ?? '')
    .split(',')
    .map((pair) => pair.trim())
    .filter((pair) => pair !== '');
  const given = pairs.find((pair) => pair.split('=')[0]?.trim() === INSTANCE);
  const base = given === undefined ? `${hostname()}-${primaryPid}` : given.slice(given.indexOf('=') + 1).trim();
  const others = pairs.filter((pair) => pair !== given);
  return { OTEL_RESOURCE_ATTRIBUTES: [...others, `${INSTANCE}=${base}-worker-${slot}`].join(',') };
}
