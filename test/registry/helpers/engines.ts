/**
 * Runs one registry test suite on each database engine: PGlite in memory, and a fresh database on
 * the PostgreSQL server at 127.0.0.1:5432 (skipped with the reason when there is none, except
 * under CI=true: see postgres.ts).
 */
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from './postgres.ts';

export interface EngineContext {
  readonly engine: 'PGlite' | 'PostgreSQL';
  /** The `database:` line of a registry config for this engine (after the `before` hooks ran). */
  readonly databaseYaml: string;
  /** The config of `openStore` for this engine. */
  readonly databaseConfig: { type: 'memory' } | { type: 'postgres'; url: string };
  /** Why the suite is skipped on this engine, or null. */
  readonly skip: string | null;
  /** `it`, skipped (with the reason) when the engine is not available. */
  test(name: string, body: () => Promise<void>): void;
}

export function describeOnEngines(title: string, suite: (context: EngineContext) => void): void {
  for (const engine of ['PGlite', 'PostgreSQL'] as const) {
    describe(`${title} (${engine})`, () => {
      let database: TestDatabase | null = null;
      let skip: string | null = null;
      const context: EngineContext = {
        engine,
        get databaseYaml() {
          return database === null ? 'database: {type: memory}' : `database: {type: postgres, url: "${database.url}"}`;
        },
        get databaseConfig() {
          return database === null ? { type: 'memory' as const } : { type: 'postgres' as const, url: database.url };
        },
        get skip() {
          return skip;
        },
        test(name, body) {
          it(name, async (t) => {
            if (skip !== null) return t.skip(skip);
            await body();
          });
        },
      };
      before(async () => {
        if (engine === 'PGlite') return;
        const created = await createTestDatabase();
        if ('skip' in created) skip = created.skip;
        else database = created;
      });
      suite(context);
      after(async () => {
        await database?.drop();
      });
    });
  }
}
