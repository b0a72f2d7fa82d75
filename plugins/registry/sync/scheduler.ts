/**
 * Runs the syncs of the synced sources: once at start (before the server reports ready), then
 * every `syncPolicy.interval`. A sync still running when its next turn comes is not doubled.
 * Only file sources are synced in this version (git sources are refused at start).
 */
import type { Logger } from 'pino';
import type { SourceDefinition } from '../config/registry-config.ts';
import type { Store } from '../store/store.ts';
import { syncFileSource } from './file-source.ts';

export class SyncScheduler {
  readonly #store: Store;
  readonly #sources: readonly SourceDefinition[];
  readonly #log: Logger;
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #running = new Map<string, Promise<unknown>>();
  #stopped = false;

  constructor(store: Store, sources: readonly SourceDefinition[], log: Logger) {
    this.#store = store;
    this.#sources = sources.filter((source) => source.kind === 'file');
    this.#log = log;
  }

  /** Syncs every source once, then schedules the next syncs. */
  async start(): Promise<void> {
    await Promise.all(this.#sources.map((source) => this.syncNow(source.name)));
    for (const source of this.#sources) {
      this.#timers.push(setInterval(() => void this.syncNow(source.name), source.syncIntervalMs ?? 300_000));
    }
  }

  /** Syncs one source now (joins the sync in progress, if any). */
  syncNow(name: string): Promise<unknown> {
    const running = this.#running.get(name);
    if (running !== undefined) return running;
    const source = this.#sources.find((s) => s.name === name);
    if (source === undefined || this.#stopped) return Promise.resolve();
    const run = syncFileSource(this.#store, source, this.#log)
      .catch((err: unknown) => this.#log.error({ err, source: name }, 'sync failed unexpectedly'))
      .finally(() => this.#running.delete(name));
    this.#running.set(name, run);
    return run;
  }

  /** Stops scheduling and waits for the syncs in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    await Promise.all(this.#running.values());
  }
}
