/**
 * Prometheus metrics of source syncs, on the server's `/metrics`: attempts by outcome, their
 * duration, and per source the entries of its last good data and when that was.
 */
import client, { type Registry } from 'prom-client';
import { CounterFamily, HistogramFamily } from '@gatehouse-mcp/gateway';

const SYNC_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** What became of one attempt. */
export type SyncOutcome = 'synced' | 'unchanged' | 'failed' | 'elsewhere';

export class SyncMetrics {
  readonly #attempts = new CounterFamily('gatehouse_registry_sync_total', 'Source sync attempts, by source and outcome (synced, unchanged, failed, elsewhere: another process held the source)', ['source', 'outcome']);
  readonly #duration = new HistogramFamily('gatehouse_registry_sync_seconds', 'Time of source syncs (read and write), by source', ['source'], SYNC_BUCKETS);
  readonly #entries: client.Gauge<'source' | 'kind'>;
  readonly #lastSuccess: client.Gauge<'source'>;
  readonly #failing: client.Gauge<'source'>;

  constructor(registry: Registry | null) {
    const registers = registry === null ? [] : [registry];
    this.#entries = new client.Gauge({ name: 'gatehouse_registry_source_entries', help: 'Entry versions of a source\'s last good data, by kind', labelNames: ['source', 'kind'], registers });
    this.#lastSuccess = new client.Gauge({ name: 'gatehouse_registry_source_last_success_timestamp_seconds', help: 'When a source last synced successfully (Unix time)', labelNames: ['source'], registers });
    this.#failing = new client.Gauge({ name: 'gatehouse_registry_source_failed_attempts', help: 'Failed sync attempts of a source since its last success', labelNames: ['source'], registers });
    if (registry !== null) for (const family of [this.#attempts, this.#duration]) registry.registerMetric(family as never);
  }

  attempt(source: string, outcome: SyncOutcome, seconds: number | null): void {
    this.#attempts.child(source, outcome).value++;
    if (seconds !== null) this.#duration.child(source).observe(seconds);
  }

  state(source: string, state: { servers: number; skills: number; lastSuccessAt: string | null; failedAttempts: number }): void {
    this.#entries.set({ source, kind: 'server' }, state.servers);
    this.#entries.set({ source, kind: 'skill' }, state.skills);
    if (state.lastSuccessAt !== null) this.#lastSuccess.set({ source }, Date.parse(state.lastSuccessAt) / 1000);
    this.#failing.set({ source }, state.failedAttempts);
  }

  /** A source that no longer exists leaves no series behind. */
  forget(source: string): void {
    this.#entries.remove({ source, kind: 'server' });
    this.#entries.remove({ source, kind: 'skill' });
    this.#lastSuccess.remove({ source });
    this.#failing.remove({ source });
  }
}
