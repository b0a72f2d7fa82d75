/**
 * The one SQL interface the registry's stores use, whatever runs the SQL: PostgreSQL embedded in
 * the process (PGlite, on a data directory or in memory) or a PostgreSQL server (`pg`). Both
 * speak the same SQL and return the same JavaScript values (jsonb → objects, text[] → arrays,
 * timestamptz → Date, integer → number), so the stores are written once.
 */

/** Runs one parameterised statement. */
export interface SqlRunner {
  query<R>(text: string, params?: readonly unknown[]): Promise<R[]>;
}

export type DatabaseKind = 'embedded' | 'memory' | 'postgres';

export interface Database extends SqlRunner {
  readonly kind: DatabaseKind;
  /** Runs SQL text of several statements, without parameters (migrations). */
  exec(text: string): Promise<void>;
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T>;
  /**
   * Takes the lock named `key` in `space` if no one holds it, across every process on the same
   * database; null when it is held. The lock lives as long as the session that took it: a
   * process that dies (or loses its connection) frees it at once, so nothing stays locked.
   */
  tryLock(space: number, key: string): Promise<(() => Promise<void>) | null>;
  close(): Promise<void>;
}

/** SQLSTATE of an error from either driver, or null. */
export function sqlState(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}

export const UNIQUE_VIOLATION = '23505';
