/**
 * The registry's store: one database (embedded PGlite by default, in-memory PGlite, or a
 * PostgreSQL server), migrated at open, and the stores of each concept on it.
 */
import type { DatabaseConfig } from '../config/registry-config.ts';
import type { Database } from './database.ts';
import { lockDataDir } from './data-dir-lock.ts';
import { EntriesStore } from './entries-store.ts';
import { EntryListing } from './entry-listing.ts';
import { migrate } from './migrations.ts';
import { openPglite } from './pglite-database.ts';
import { openPostgres } from './postgres-database.ts';
import { PlannerStatistics } from './planner-statistics.ts';
import { RegistriesStore } from './registries-store.ts';
import { SourcesStore } from './sources-store.ts';

export class Store {
  readonly db: Database;
  readonly sources: SourcesStore;
  readonly registries: RegistriesStore;
  readonly entries: EntriesStore;
  readonly listing: EntryListing;
  readonly statistics: PlannerStatistics;
  readonly #release: () => Promise<void>;

  constructor(db: Database, release: () => Promise<void> = async () => {}) {
    this.db = db;
    this.statistics = new PlannerStatistics(db);
    this.sources = new SourcesStore(db);
    this.registries = new RegistriesStore(db);
    this.entries = new EntriesStore(db, this.statistics);
    this.listing = new EntryListing(db);
    this.#release = release;
  }

  async close(): Promise<void> {
    await this.statistics.idle();
    await this.db.close();
    await this.#release();
  }
}

/** Opens (and migrates) the database the config names. */
export async function openStore(config: DatabaseConfig): Promise<Store> {
  let db: Database;
  let release = async (): Promise<void> => {};
  if (config.type === 'postgres') db = await openPostgres({ url: config.url });
  else if (config.type === 'memory') db = await openPglite(null);
  else {
    release = await lockDataDir(config.path);
    try {
      db = await openPglite(config.path);
    } catch (err) {
      await release();
      throw err;
    }
  }
  const store = new Store(db, release);
  try {
    await migrate(db);
    await store.statistics.refresh();
  } catch (err) {
    await db.close();
    await release();
    throw err;
  }
  return store;
}
