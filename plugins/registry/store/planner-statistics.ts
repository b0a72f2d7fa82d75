/**
 * Planner statistics after bulk writes. PGlite runs PostgreSQL in single-user mode: there is no
 * autovacuum, so nothing ever runs ANALYZE and the planner guesses. Without statistics a page of
 * a 10,000-entry listing was planned as "join everything, then sort" (74 ms instead of 4 ms).
 * A PostgreSQL server's autovacuum does analyze, but up to its naptime (a minute) after a sync
 * wrote thousands of rows, and listings were that slow meanwhile (70 ms a page after a
 * 10,000-entry sync). So on both engines this does what autovacuum's analyze trigger does, at
 * once: ANALYZE the registry's tables once the entries changed by more than 50 rows plus 10%
 * since the last time (and at open).
 */
import type { Database } from './database.ts';

export class PlannerStatistics {
  readonly #db: Database;
  #changed = 0;
  #rows = 0;
  #running: Promise<void> | null = null;

  constructor(db: Database) {
    this.#db = db;
  }

  /** Runs ANALYZE of the entry tables now. */
  async refresh(): Promise<void> {
    this.#changed = 0;
    // The registry's own tables (on a server the database may hold others it cannot analyze), the
    // small ones too: without their statistics the planner misjudged how many entries a registry
    // serves and sorted all of them for every page (38 ms instead of 1.5 ms at 10,000 entries).
    await this.#db.query('ANALYZE entries, entry_versions, sources, registries, registry_sources');
    const rows = await this.#db.query<{ n: number }>('SELECT count(*)::int AS n FROM entry_versions');
    this.#rows = rows[0]?.n ?? 0;
  }

  /** Counts written rows; starts an ANALYZE in the background when enough have changed. */
  noteChanges(rows: number): void {
    if (rows === 0) return;
    this.#changed += rows;
    if (this.#running !== null || this.#changed <= 50 + this.#rows / 10) return;
    this.#running = this.refresh()
      .catch(() => {})
      .finally(() => (this.#running = null));
  }

  /** Waits for a background ANALYZE (before closing the database). */
  async idle(): Promise<void> {
    await this.#running;
  }
}
