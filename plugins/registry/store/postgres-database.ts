/**
 * A PostgreSQL server, through a `pg` connection pool. A transaction runs on one pooled
 * connection between BEGIN and COMMIT (ROLLBACK when the work throws).
 */
import pg from 'pg';
import type { Database, SqlRunner } from './database.ts';

export interface PostgresOptions {
  readonly url: string;
  /** Connections in the pool (default 10). */
  readonly max?: number;
}

export async function openPostgres(options: PostgresOptions): Promise<Database> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.max ?? 10 });
  // Idle connections can fail (server restart); the pool replaces them, this keeps the process up.
  pool.on('error', () => {});
  // Fail at start, not at the first request, when the server cannot be reached.
  const probe = await pool.connect();
  probe.release();
  const query = async <R>(text: string, params: readonly unknown[] = []): Promise<R[]> => {
    const result = await pool.query(text, params as unknown[]);
    return result.rows as R[];
  };
  return {
    kind: 'postgres',
    query,
    async exec(text) {
      await pool.query(text);
    },
    async transaction(work) {
      const client = await pool.connect();
      const tx: SqlRunner = {
        async query<R>(text: string, params: readonly unknown[] = []): Promise<R[]> {
          const result = await client.query(text, params as unknown[]);
          return result.rows as R[];
        },
      };
      let broken = false;
      try {
        await client.query('BEGIN');
        const value = await work(tx);
        await client.query('COMMIT');
        return value;
      } catch (err) {
        // A connection that cannot even roll back is discarded rather than returned to the pool.
        await client.query('ROLLBACK').catch(() => (broken = true));
        throw err;
      } finally {
        client.release(broken);
      }
    },
    async tryLock(space, key) {
      // A session-level advisory lock on a connection held for as long as the lock is: when the
      // process dies, PostgreSQL ends the session and the lock with it.
      const client = await pool.connect();
      let broken = false;
      try {
        const rows = (await client.query('SELECT pg_try_advisory_lock($1::int, hashtext($2)) AS ok', [space, key])).rows as { ok: boolean }[];
        if (rows[0]?.ok !== true) {
          client.release();
          return null;
        }
      } catch (err) {
        client.release(true);
        throw err;
      }
      const onError = (): void => void (broken = true);
      client.on('error', onError);
      return async () => {
        await client.query('SELECT pg_advisory_unlock($1::int, hashtext($2))', [space, key]).catch(() => (broken = true));
        client.off('error', onError);
        client.release(broken);
      };
    },
    async close() {
      await pool.end();
    },
  };
}
