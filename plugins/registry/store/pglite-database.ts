/**
 * PostgreSQL embedded in the process (PGlite): durable on a data directory (the default), or in
 * memory. PGlite runs one statement at a time; a transaction holds it exclusively, so concurrent
 * transactions are serialised by the engine itself.
 */
import { PGlite } from '@electric-sql/pglite';
import type { Database, SqlRunner } from './database.ts';

function runner(db: Pick<PGlite, 'query'>): SqlRunner {
  return {
    async query<R>(text: string, params: readonly unknown[] = []): Promise<R[]> {
      const result = await db.query<R>(text, params as unknown[]);
      return result.rows;
    },
  };
}

/** Opens PGlite on `dataDir` (created when missing), or in memory when `dataDir` is null. */
export async function openPglite(dataDir: string | null): Promise<Database> {
  const db = dataDir === null ? await PGlite.create() : await PGlite.create(dataDir);
  const run = runner(db);
  // One process owns an embedded database (the data directory is locked): locks are in memory.
  const held = new Set<string>();
  return {
    kind: dataDir === null ? 'memory' : 'embedded',
    query: run.query,
    async exec(text) {
      await db.exec(text);
    },
    transaction(work) {
      return db.transaction((tx) => work(runner(tx)));
    },
    async tryLock(space, key) {
      const name = `${space}\u001f${key}`;
      if (held.has(name)) return null;
      held.add(name);
      return async () => void held.delete(name);
    },
    async close() {
      if (!db.closed) await db.close();
    },
  };
}
