/**
 * The metrics of a registry-fed group, on the gateway's `/metrics`: plain numbers the feed sets,
 * read by prom-client at scrape time. Made once per server, so that they outlive the feeds a
 * reload restarts; a second server on the same registry of metrics shares them.
 *
 *  - `gatehouse_vmcp_registry_reads_total{outcome}`: reads of the registry, `changed` (the
 *    group's servers changed), `unchanged` or `failed` (the last good list kept serving);
 *  - `gatehouse_vmcp_registry_up`: 1 when the last read succeeded, 0 while reads fail;
 *  - `gatehouse_vmcp_registry_servers`: the registry's servers in the group now;
 *  - `gatehouse_vmcp_registry_skipped_entries`: entries of the last good read that could not be
 *    servers (no streamable-http remote, a URL or claims refused: each is logged, naming it);
 *  - `gatehouse_vmcp_registry_last_success_timestamp_seconds`.
 */
import client, { type Registry } from 'prom-client';

export const READ_OUTCOMES = ['changed', 'unchanged', 'failed'] as const;
export type ReadOutcome = (typeof READ_OUTCOMES)[number];

export class FeedMetrics {
  readonly reads: Record<ReadOutcome, number> = { changed: 0, unchanged: 0, failed: 0 };
  up = 0;
  servers = 0;
  skipped = 0;
  lastSuccessSeconds = 0;

  /** The metrics of `registry` (created there once; an existing set is returned as it is). */
  static of(registry: Registry): FeedMetrics {
    const existing = SHARED.get(registry);
    if (existing !== undefined) return existing;
    const metrics = new FeedMetrics();
    SHARED.set(registry, metrics);
    new client.Gauge({
      name: 'gatehouse_vmcp_registry_reads_total',
      help: 'Reads of the registry that feeds the group, by outcome (changed, unchanged, failed: the last good list kept serving)',
      labelNames: ['outcome'],
      registers: [registry],
      collect() {
        for (const outcome of READ_OUTCOMES) this.set({ outcome }, metrics.reads[outcome]);
      },
    });
    const gauge = (name: string, help: string, read: () => number): void => {
      new client.Gauge({ name, help, registers: [registry], collect() { this.set(read()); } });
    };
    gauge('gatehouse_vmcp_registry_up', 'Whether the last read of the registry that feeds the group succeeded', () => metrics.up);
    gauge('gatehouse_vmcp_registry_servers', "The registry's servers in the group now", () => metrics.servers);
    gauge('gatehouse_vmcp_registry_skipped_entries', 'Entries of the last good read that could not be servers of the group (each logged)', () => metrics.skipped);
    gauge('gatehouse_vmcp_registry_last_success_timestamp_seconds', 'When the registry was last read successfully', () => metrics.lastSuccessSeconds);
    return metrics;
  }
}

const SHARED = new WeakMap<Registry, FeedMetrics>();
