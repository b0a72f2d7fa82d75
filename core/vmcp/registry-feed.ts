/**
 * The registry read again and again for a registry-fed group: every `syncPolicy.interval`
 * (each wait jittered by ±10 %, so that replicas started together do not read together), and
 * its servers handed on when they changed. The group's reload (virtual-mcp-server.ts) then joins,
 * changes or drops backends as a reload of the file would.
 *
 * Why a full read every time: the admin listing, where the claims are, has no ETag and no
 * `updated_since`; the consumer API's `updated_since` sees new and deleted versions but not what
 * changes an entry without a new version (its claims, a source leaving the registry, the
 * registry's own claims gate), and each of those changes who sees what. A read is one request a
 * hundred entries, bounded in time and bytes.
 *
 * A failed read (the registry down, an error status, an answer that is not a listing, more than
 * `maxServers` servers, past `timeout`) changes nothing: the last good list keeps serving. It is
 * logged once per outage (a warning with the reason; the next ones at debug) and its recovery
 * once, counted in `gatehouse_vmcp_registry_reads_total{outcome="failed"}`, and the next read
 * comes sooner (1 s, 2 s, 4 s… up to the interval). Entries that cannot be servers are skipped,
 * each logged once with the reason while it stays so.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { RegistryFeedConfig } from '../config/vmcp-types.ts';
import type { FeedMetrics } from './feed-metrics.ts';
import { parseEntriesPage, readEntry, RegistryAnswerError, type FedServer } from './registry-entries.ts';
import type { RegistrySource } from './registry-source.ts';

/** Entries asked for a page (the admin listing's default). */
export const PAGE_SIZE = 100;
const RETRY_MIN_MS = 1_000;

export interface RegistryFeedOptions {
  readonly settings: RegistryFeedConfig;
  readonly source: RegistrySource;
  readonly log: Logger;
  readonly metrics: FeedMetrics;
  /** The servers changed (read them in `servers`). */
  readonly onChange: () => void;
  /** A good read found them unchanged (a change not applied yet is tried again then). */
  readonly onUnchanged?: () => void;
}

interface Skip {
  readonly entry: string;
  readonly reason: string;
  readonly warn: boolean;
}

/** `ms` ± 10 %. */
export function jittered(ms: number): number {
  return Math.round(ms * (0.9 + Math.random() * 0.2));
}

/** Why a read failed, in one line. */
function reasonOf(err: unknown, timeoutMs: number, timedOut: boolean): string {
  if (timedOut) return `the read took longer than timeout (${timeoutMs} ms)`;
  if (err instanceof RegistryAnswerError) return err.message;
  const error = err as { code?: unknown; message?: unknown };
  const code = typeof error?.code === 'string' ? `${error.code}: ` : '';
  return `${code}${typeof error?.message === 'string' ? error.message : String(err)}`;
}

export class RegistryFeed {
  readonly #o: RegistryFeedOptions;
  readonly #log: Logger;
  readonly #stopping = new AbortController();
  #servers: readonly FedServer[] = [];
  /** Skipped entries already logged, with the reason they were logged for. */
  #logged = new Map<string, string>();
  #failures = 0;
  #timer: NodeJS.Timeout | null = null;
  #reading: Promise<void> | null = null;
  #stopped = false;

  constructor(options: RegistryFeedOptions) {
    this.#o = options;
    this.#log = options.log.child({ registry: options.source.label });
  }

  get settings(): RegistryFeedConfig {
    return this.#o.settings;
  }

  get source(): RegistrySource {
    return this.#o.source;
  }

  /** The last good list (empty until the first good read). */
  get servers(): readonly FedServer[] {
    return this.#servers;
  }

  /** Takes over the last good list of the feed this one replaces (a reload changed only how the registry is read). */
  inherit(servers: readonly FedServer[]): void {
    this.#servers = servers;
  }

  /** One read now (the first, before the group is served); its outcome is logged. Never rejects. */
  first(): Promise<void> {
    return this.#readOnce();
  }

  /** Reads on the interval from now on. */
  start(): void {
    if (!this.#stopped && this.#timer === null) this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#reading;
  }

  #schedule(): void {
    const { intervalMs } = this.#o.settings;
    const wait = this.#failures === 0 ? intervalMs : Math.min(intervalMs, RETRY_MIN_MS * 2 ** (this.#failures - 1));
    this.#timer = setTimeout(() => {
      void this.#readOnce().then(() => {
        if (!this.#stopped) this.#schedule();
      });
    }, jittered(wait));
    this.#timer.unref();
  }

  #readOnce(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = null;
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    const { timeoutMs } = this.#o.settings;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([this.#stopping.signal, timeout]);
    let found: { servers: FedServer[]; skipped: Skip[] };
    try {
      found = await this.#readAll(signal);
    } catch (err) {
      if (this.#stopping.signal.aborted) return;
      this.#failed(reasonOf(err, timeoutMs, timeout.aborted));
      return;
    }
    if (this.#stopping.signal.aborted) return;
    this.#succeeded(found.servers, found.skipped);
  }

  /** Every page, every entry checked; servers sorted by entry name. */
  async #readAll(signal: AbortSignal): Promise<{ servers: FedServer[]; skipped: Skip[] }> {
    const { maxServers } = this.#o.settings;
    const maxPages = Math.ceil(maxServers / PAGE_SIZE) + 2;
    const servers = new Map<string, FedServer>();
    const skipped: Skip[] = [];
    const seen = new Set<string>();
    let cursor: string | null = null;
    for (let pages = 1; ; pages++) {
      const page = parseEntriesPage(await this.#o.source.page(cursor, PAGE_SIZE, signal));
      let skills = false;
      for (const raw of page.entries) {
        const outcome = readEntry(raw);
        if (outcome.kind === 'skill') {
          skills = true;
          continue;
        }
        const entry = outcome.kind === 'server' ? outcome.server.entry : outcome.entry;
        if (seen.has(entry)) {
          skipped.push({ entry, reason: 'the registry listed it twice', warn: true });
          servers.delete(entry);
          continue;
        }
        seen.add(entry);
        if (seen.size > maxServers) throw new RegistryAnswerError(`the registry lists more than maxServers (${maxServers}) servers`);
        if (outcome.kind === 'server') servers.set(entry, outcome.server);
        else skipped.push(outcome);
      }
      // The listing orders entries by kind, then name: past the first skill there are only skills.
      if (page.nextCursor === null || skills) break;
      if (pages >= maxPages) throw new RegistryAnswerError(`the registry's listing goes on past ${maxPages} pages`);
      cursor = page.nextCursor;
    }
    const sorted = [...servers.values()].sort((a, b) => (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0));
    return { servers: sorted, skipped };
  }

  #failed(reason: string): void {
    const metrics = this.#o.metrics;
    metrics.reads.failed++;
    metrics.up = 0;
    this.#failures++;
    if (this.#failures === 1) {
      this.#log.warn({ reason, servers: this.#servers.length }, `the registry cannot be read (${reason}): the last good list of its servers (${this.#servers.length}) keeps serving; read again with backoff`);
    } else {
      this.#log.debug({ reason, failures: this.#failures }, 'the registry still cannot be read');
    }
  }

  #succeeded(servers: FedServer[], skipped: Skip[]): void {
    const metrics = this.#o.metrics;
    if (this.#failures > 0) this.#log.info({ failedReads: this.#failures }, `the registry is read again after ${this.#failures} failed read${this.#failures === 1 ? '' : 's'}`);
    this.#failures = 0;
    this.#logSkipped(skipped);
    metrics.up = 1;
    metrics.skipped = skipped.length;
    metrics.lastSuccessSeconds = Date.now() / 1000;
    if (isDeepStrictEqual(servers, this.#servers)) {
      metrics.reads.unchanged++;
      this.#o.onUnchanged?.();
      return;
    }
    metrics.reads.changed++;
    this.#servers = servers;
    this.#log.info({ servers: servers.map((s) => s.entry) }, `the registry's servers changed: ${servers.length} servable`);
    this.#o.onChange();
  }

  /** Each skipped entry once while it stays skipped for the same reason. */
  #logSkipped(skipped: readonly Skip[]): void {
    const now = new Map<string, string>();
    for (const { entry, reason, warn } of skipped) {
      now.set(entry, reason);
      if (this.#logged.get(entry) === reason) continue;
      // A valid name is quoted here; another one came quoted and escaped already (registry-entries.ts).
      const label = /^[A-Za-z0-9./_-]+$/.test(entry) ? JSON.stringify(entry) : entry;
      const message = `registry entry ${label} skipped: ${reason}`;
      if (warn) this.#log.warn({ entry, reason }, message);
      else this.#log.info({ entry, reason }, message);
    }
    this.#logged = now;
  }
}
