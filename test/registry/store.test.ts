/**
 * The same store suite on PGlite (in memory) and on a real PostgreSQL server (a fresh database
 * per run at 127.0.0.1:5432, dropped afterwards; skipped with the reason when unreachable,
 * except under CI=true).
 */
import { openStore } from '../../plugins/registry/store/store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.ts';
import { storeSuite } from './helpers/store-suite.ts';

storeSuite('PGlite (memory)', () => openStore({ type: 'memory' }));

let database: TestDatabase | null = null;
storeSuite(
  'PostgreSQL',
  async () => {
    const created = await createTestDatabase();
    if ('skip' in created) return created;
    database = created;
    return openStore({ type: 'postgres', url: created.url });
  },
  async () => {
    await database?.drop();
  },
);
