/**
 * Planner statistics for the embedded engine. PGlite runs PostgreSQL in single-user mode: there
 * is no autovacuum, so nothing ever runs ANALYZE and the planner guesses. Without statistics a
 * page of a 10,000-entry listing was planned as "join everything, then sort" (74 ms instead of
 * 4 ms). This does what autovacuum's analyze trigger does: ANALYZE once the entries changed by
 * more than 50 rows plus 10% of the table since the last time. PostgreSQL servers do it
 * themselves, so this is a no-op for them.
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

  get enabled(): boolean {
    return this.#db.kind !== 'postgres';
  }

  /** Runs ANALYZE now (embedded engine only). */
  async refresh(): Promise<void> {
    if (!this.enabled) return;
    this.#changed = 0;
    await this.#db.query('ANALYZE');
    const rows = await this.#db.query<{ n: number }>('SELECT count(*)::int AS n FROM entry_versions');
    this.#rows = rows[0]?.n ?? 0;
  }

  /** Counts written rows; starts an ANALYZE in the background when enough have changed. */
  noteChanges(rows: number): void {
    if (!this.enabled || rows === 0) return;
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
