/**
 * A PostgreSQL server, through a `pg` connection pool. A transaction runs on one pooled
 * connection between BEGIN and COMMIT (ROLLBACK when the work throws).
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Database, SqlRunner } from './database.ts';

export interface PostgresOptions {
  readonly url: string;
  /** Connections in the pool (default 10). */
  readonly max?: number;
}

/** Sync locks held at once, at most (`sync.maxConcurrent` is at most 64). */
const MAX_LOCKS = 64;

/**
 * The 64-bit advisory lock key of `key` in `space`, from SHA-256: with PostgreSQL's 32-bit
 * `hashtext`, a caller who names a source could pick a name whose key is another source's
 * (2^32 tries offline) and hold that source's syncs off with their own.
 */
export function lockKey(space: number, key: string): string {
  return createHash('sha256').update(`${space}\u001f${key}`).digest().readBigInt64BE(0).toString();
}

export async function openPostgres(options: PostgresOptions): Promise<Database> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.max ?? 10 });
  // Idle connections can fail (server restart); the pool replaces them, this keeps the process up.
  pool.on('error', () => {});
  // A lock holds its session's connection for as long as the sync it guards, and that sync needs
  // connections of its own: from one pool, syncs holding every connection would wait for each
  // other for ever (and every request with them). Locks have their own connections.
  const lockPool = new pg.Pool({ connectionString: options.url, max: MAX_LOCKS, idleTimeoutMillis: 10_000 });
  lockPool.on('error', () => {});
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
      const client = await lockPool.connect();
      const id = lockKey(space, key);
      let broken = false;
      try {
        const rows = (await client.query('SELECT pg_try_advisory_lock($1::bigint) AS ok', [id])).rows as { ok: boolean }[];
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
        await client.query('SELECT pg_advisory_unlock($1::bigint)', [id]).catch(() => (broken = true));
        client.off('error', onError);
        client.release(broken);
      };
    },
    async close() {
      await Promise.all([pool.end(), lockPool.end()]);
    },
  };
}
