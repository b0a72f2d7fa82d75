/**
 * Runs the syncs of the synced sources (every kind but managed), whoever defined them (the
 * config file or the admin API, on this process or another replica).
 *
 * - Once at start, every source syncs before the server listens; then each source runs on its
 *   own timer: `syncPolicy.interval` after a success, and after a failure an exponential
 *   back-off (5 s, 10 s, 20 s, …) capped at the interval. A failure keeps the last good data.
 * - At most `maxConcurrent` syncs run at once, each bounded in time, so one slow or broken
 *   source never starves the others. Sources created through the admin API hold at most
 *   `maxConcurrent - 1` slots and wait behind the config file's, so however many a caller
 *   creates, and however their peers stall, the operator's sources keep syncing.
 * - Across processes on one database, a source is synced by one process at a time (a database
 *   lock held for the length of the sync and freed when its holder dies); the status row is
 *   shared, so a replica whose turn comes right after another's sync finds it not due.
 * - Sources created, changed or deleted through the admin API (here or on another replica) are
 *   picked up at once here and within `reconcileMs` elsewhere.
 * - A reader that watches its source (cluster resources) asks for a sync when it changes.
 */
import type { Logger } from 'pino';
import type { SourceRecord, SyncStatus } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import { applyReadOutcome } from './apply-outcome.ts';
import type { SourceReader } from './source-reader.ts';
import { SyncFailure } from './source-reader.ts';
import type { SyncMetrics, SyncOutcome } from './sync-metrics.ts';

/** The lock space of source syncs (the key is the source's name). */
export const SYNC_LOCK_SPACE = 7305002;

/** A reader for a source; throws SyncFailure when the source cannot be read at all (a missing secret). */
export type ReaderFactory = (source: SourceRecord) => SourceReader;

/** A reader that can tell when its source changed (it then asks for a sync). */
interface WatchingReader extends SourceReader {
  onChange(listener: () => void): void;
}

export interface SchedulerOptions {
  readonly readers: ReaderFactory;
  readonly log: Logger;
  readonly metrics?: SyncMetrics | null;
  /** Syncs at once across all sources (default 4). */
  readonly maxConcurrent?: number;
  /** Bound of one read (default 10 minutes). */
  readonly readTimeoutMs?: number;
  /** First back-off after a failure (default 5 s); it doubles up to the source's interval. */
  readonly firstBackoffMs?: number;
  /** How often the list of sources is read again, for what other replicas changed (default 30 s). */
  readonly reconcileMs?: number;
  /** While another process syncs a source, how soon to look again (default 15 s, at most the interval). */
  readonly busyRetryMs?: number;
  /** How long the start waits for the first syncs (default 30 s). */
  readonly firstSyncWaitMs?: number;
}

interface Tracked {
  source: SourceRecord;
  reader: SourceReader | null;
  timer: NodeJS.Timeout | null;
  running: Promise<SyncStatus | null> | null;
  /** A change arrived while a sync ran: run again after it. */
  again: boolean;
  /** When the sync under way is over, the next one is due in this many ms. */
  next: number | null;
}

const isSynced = (source: SourceRecord): boolean => source.kind !== 'managed';

export class SyncScheduler {
  readonly #store: Store;
  readonly #options: Required<Omit<SchedulerOptions, 'metrics'>> & { metrics: SyncMetrics | null };
  readonly #tracked = new Map<string, Tracked>();
  /** Syncs waiting for a slot; `config`: of a source the config file defines. */
  readonly #waiting: { config: boolean; resolve: () => void }[] = [];
  readonly #stopping = new AbortController();
  #active = 0;
  /** Slots held by syncs of sources created through the admin API. */
  #activeApi = 0;
  #reconciler: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(store: Store, options: SchedulerOptions) {
    this.#store = store;
    this.#options = {
      maxConcurrent: 4,
      readTimeoutMs: 10 * 60_000,
      firstBackoffMs: 5_000,
      reconcileMs: 30_000,
      busyRetryMs: 15_000,
      firstSyncWaitMs: 30_000,
      ...options,
      metrics: options.metrics ?? null,
    };
  }

  /**
   * Syncs every synced source once, then keeps them on their timers. The server listens after
   * this, so clients see the synced entries from the first request; a source whose first sync
   * takes longer than `firstSyncWaitMs` goes on in the background rather than hold up the start.
   */
  async start(): Promise<void> {
    await this.refresh();
    const first = [...this.#tracked.keys()].map((name) => this.#sync(name, false).then(() => name));
    const done = new Set<string>();
    for (const run of first) void run.then((name) => done.add(name));
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#options.firstSyncWaitMs)));
    await Promise.race([Promise.all(first), waited]);
    clearTimeout(timer);
    const pending = [...this.#tracked.keys()].filter((name) => !done.has(name));
    if (pending.length > 0) this.#options.log.warn({ sources: pending, waitedMs: this.#options.firstSyncWaitMs }, 'first sync still under way: serving without these sources\' entries until it ends');
    this.#reconciler = setInterval(() => void this.refresh().catch((err: unknown) => this.#options.log.error({ err }, 'cannot read the sources to sync')), this.#options.reconcileMs);
    this.#reconciler.unref();
  }

  /**
   * Reads the list of sources again: new synced sources are tracked (and synced), changed ones
   * get a new reader and sync, deleted ones are dropped.
   */
  async refresh(): Promise<void> {
    if (this.#stopped) return;
    const sources = (await this.#store.sources.list()).filter(isSynced);
    const names = new Set(sources.map((source) => source.name));
    for (const [name, tracked] of this.#tracked) {
      if (!names.has(name)) await this.#drop(name, tracked);
    }
    for (const source of sources) {
      const tracked = this.#tracked.get(source.name);
      if (tracked === undefined) {
        this.#tracked.set(source.name, { source, reader: null, timer: null, running: null, again: false, next: null });
        if (this.#reconciler !== null) this.#soon(source.name, 0);
      } else if (tracked.source.updatedAt.getTime() !== source.updatedAt.getTime()) {
        tracked.source = source;
        await this.#closeReader(tracked);
        this.#soon(source.name, 0, true);
      }
    }
  }

  /**
   * The credentials sources read with may have changed (a reload brought new Secret values):
   * every tracked source gets a new reader, made with them, and syncs soon.
   */
  async renewReaders(): Promise<void> {
    if (this.#stopped) return;
    for (const [name, tracked] of this.#tracked) {
      await this.#closeReader(tracked);
      if (this.#reconciler !== null) this.#soon(name, 0, true);
    }
  }

  /** Syncs `name` now, whatever its timer says (the admin API's sync); joins a sync under way. */
  async syncNow(name: string): Promise<SyncStatus | null> {
    if (!this.#tracked.has(name)) await this.refresh();
    if (!this.#tracked.has(name)) return null;
    return this.#sync(name, true);
  }

  /** Stops the timers and watches, aborts the reads under way and waits for them. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    if (this.#reconciler !== null) clearInterval(this.#reconciler);
    for (const waiter of this.#waiting.splice(0)) {
      this.#take(waiter.config);
      waiter.resolve();
    }
    const running = [...this.#tracked.values()].map((tracked) => tracked.running).filter((run) => run !== null);
    await Promise.allSettled(running);
    for (const [name, tracked] of this.#tracked) await this.#drop(name, tracked);
  }

  // ---- one sync ----------------------------------------------------------------------------

  #sync(name: string, force: boolean): Promise<SyncStatus | null> {
    const tracked = this.#tracked.get(name);
    if (tracked === undefined || this.#stopped) return Promise.resolve(null);
    if (tracked.running !== null) {
      if (force) tracked.again = true;
      return tracked.running;
    }
    if (tracked.timer !== null) clearTimeout(tracked.timer);
    tracked.timer = null;
    const run = this.#run(name, tracked, force)
      .catch((err: unknown) => {
        this.#options.log.error({ err, source: name }, 'sync failed unexpectedly');
        return null;
      })
      .finally(() => {
        tracked.running = null;
        if (this.#stopped || this.#tracked.get(name) !== tracked) return;
        if (tracked.again) this.#soon(name, 0, true);
        else if (tracked.next !== null) this.#soon(name, tracked.next);
        tracked.again = false;
        tracked.next = null;
      });
    tracked.running = run;
    return run;
  }

  async #run(name: string, tracked: Tracked, force: boolean): Promise<SyncStatus | null> {
    const config = tracked.source.origin === 'config';
    await this.#slot(config);
    try {
      if (this.#stopped) return null;
      const release = await this.#store.db.tryLock(SYNC_LOCK_SPACE, name);
      if (release === null) {
        // Another process is syncing it: its status is ours to read when we look again.
        this.#options.metrics?.attempt(name, 'elsewhere', null);
        tracked.next = Math.min(this.#options.busyRetryMs, tracked.source.syncIntervalMs ?? Infinity);
        return (await this.#store.sources.get(name))?.sync ?? null;
      }
      try {
        const source = await this.#store.sources.get(name);
        if (source === null || !isSynced(source)) return null;
        if (source.updatedAt.getTime() !== tracked.source.updatedAt.getTime()) {
          tracked.source = source;
          await this.#closeReader(tracked);
        }
        const previous = source.sync;
        const dueAt = previous?.nextAttemptAt == null ? 0 : Date.parse(previous.nextAttemptAt);
        if (!force && dueAt > Date.now() + 1000) {
          // Another replica synced it meanwhile.
          tracked.next = dueAt - Date.now();
          return previous;
        }
        const status = await this.#attempt(source, tracked, previous);
        tracked.next = Date.parse(status.nextAttemptAt!) - Date.now();
        return status;
      } finally {
        await release();
      }
    } finally {
      this.#release(config);
    }
  }

  async #attempt(source: SourceRecord, tracked: Tracked, previous: SyncStatus | null): Promise<SyncStatus> {
    const { log, metrics } = this.#options;
    const started = Date.now();
    const startedAt = new Date(started).toISOString();
    const interval = source.syncIntervalMs ?? 300_000;
    const base: SyncStatus = previous ?? { phase: 'pending', lastAttemptAt: null, lastSuccessAt: null, nextAttemptAt: null, failedAttempts: 0, attempts: 0, message: null, servers: 0, skills: 0, skipped: [], digest: null, revision: null };
    const attempt = { ...base, phase: 'syncing' as const, lastAttemptAt: startedAt, attempts: base.attempts + 1 };
    await this.#store.sources.setSyncStatus(source.name, attempt);

    const timeout = AbortSignal.timeout(this.#options.readTimeoutMs);
    const signal = AbortSignal.any([timeout, this.#stopping.signal]);
    let outcome: SyncOutcome;
    let status: SyncStatus;
    try {
      const reader = this.#readerOf(source, tracked);
      const read = await reader.read({ signal, previous: base.phase === 'pending' ? null : base });
      if (signal.aborted) throw new SyncFailure(timeout.aborted ? `the sync took longer than ${this.#options.readTimeoutMs / 1000} s` : 'the server is stopping');
      const applied = await applyReadOutcome(this.#store, source, read);
      const now = new Date().toISOString();
      outcome = applied.written ? 'synced' : 'unchanged';
      status = {
        ...attempt,
        phase: 'ok',
        lastSuccessAt: now,
        nextAttemptAt: new Date(Date.now() + interval).toISOString(),
        failedAttempts: 0,
        message: null,
        servers: applied.servers ?? base.servers,
        skills: applied.skills ?? base.skills,
        skipped: applied.skipped ?? base.skipped,
        digest: applied.digest ?? base.digest,
        revision: applied.revision ?? base.revision,
      };
      const logged = { source: source.name, kind: source.kind, servers: status.servers, skills: status.skills, skipped: status.skipped.length, ms: Date.now() - started, ...applied.changes };
      if (applied.written) log.info(logged, 'source synced');
      else log.debug(logged, 'source unchanged');
      if (status.skipped.length > 0 && applied.written) log.warn({ source: source.name, skipped: status.skipped.slice(0, 10) }, `${status.skipped.length} invalid item(s) skipped`);
    } catch (err) {
      const failedAttempts = base.failedAttempts + 1;
      const backoff = Math.min(interval, this.#options.firstBackoffMs * 2 ** Math.min(failedAttempts - 1, 30));
      const message = err instanceof SyncFailure ? err.message : `unexpected failure: ${(err as Error).message ?? String(err)}`;
      outcome = 'failed';
      status = { ...attempt, phase: 'failed', message, failedAttempts, nextAttemptAt: new Date(Date.now() + backoff).toISOString() };
      if (err instanceof SyncFailure) log.warn({ source: source.name, kind: source.kind, reason: message, failedAttempts, retryInMs: backoff }, 'sync failed: the source keeps its last good data');
      else log.error({ err, source: source.name, kind: source.kind, failedAttempts, retryInMs: backoff }, 'sync failed unexpectedly: the source keeps its last good data');
    }
    await this.#store.sources.setSyncStatus(source.name, status);
    metrics?.attempt(source.name, outcome, (Date.now() - started) / 1000);
    metrics?.state(source.name, status);
    return status;
  }

  #readerOf(source: SourceRecord, tracked: Tracked): SourceReader {
    if (tracked.reader !== null) return tracked.reader;
    const reader = this.#options.readers(source);
    tracked.reader = reader;
    const watching = reader as Partial<WatchingReader>;
    if (typeof watching.onChange === 'function') {
      watching.onChange(() => {
        if (this.#tracked.get(source.name) === tracked && tracked.reader === reader) this.#soon(source.name, 0, true);
      });
    }
    return reader;
  }

  // ---- timers, slots, readers --------------------------------------------------------------

  #soon(name: string, delayMs: number, force = false): void {
    const tracked = this.#tracked.get(name);
    if (tracked === undefined || this.#stopped) return;
    if (tracked.running !== null) {
      if (force) tracked.again = true;
      return;
    }
    if (tracked.timer !== null) clearTimeout(tracked.timer);
    // setTimeout holds at most 2^31-1 ms; a longer wait is cut short and re-checked (not due yet).
    tracked.timer = setTimeout(() => void this.#sync(name, force), Math.max(0, Math.min(delayMs, 2 ** 31 - 1)));
    tracked.timer.unref();
  }

  /**
   * Slots: the syncs of sources created through the admin API (whose peers a caller names, and
   * may make stall) hold at most `maxConcurrent - 1` of them, and the syncs of the config file's
   * sources are served first; so a caller's sources never hold up the operator's.
   */
  #mayRun(config: boolean): boolean {
    const max = this.#options.maxConcurrent;
    return this.#active < max && (config || max === 1 || this.#activeApi < max - 1);
  }

  #take(config: boolean): void {
    this.#active++;
    if (!config) this.#activeApi++;
  }

  async #slot(config: boolean): Promise<void> {
    const ahead = this.#waiting.some((waiter) => waiter.config || !config);
    if (!ahead && this.#mayRun(config)) return this.#take(config);
    await new Promise<void>((resolve) => this.#waiting.push({ config, resolve }));
  }

  #release(config: boolean): void {
    this.#active--;
    if (!config) this.#activeApi--;
    for (;;) {
      const first = this.#waiting.findIndex((waiter) => waiter.config);
      const next = first !== -1 && this.#mayRun(true) ? first : this.#waiting.findIndex((waiter) => !waiter.config && this.#mayRun(false));
      if (next === -1) return;
      const [waiter] = this.#waiting.splice(next, 1);
      this.#take(waiter!.config);
      waiter!.resolve();
    }
  }

  async #closeReader(tracked: Tracked): Promise<void> {
    const reader = tracked.reader;
    tracked.reader = null;
    try {
      await reader?.close?.();
    } catch (err) {
      this.#options.log.warn({ err, source: tracked.source.name }, 'closing a source reader failed');
    }
  }

  async #drop(name: string, tracked: Tracked): Promise<void> {
    if (tracked.timer !== null) clearTimeout(tracked.timer);
    this.#tracked.delete(name);
    await this.#closeReader(tracked);
    this.#options.metrics?.forget(name);
  }
}
