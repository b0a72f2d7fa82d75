/**
 * A fresh PostgreSQL database per test run on the server at 127.0.0.1:5432 (trust auth, user
 * postgres or root), dropped afterwards. When no server answers, the PostgreSQL suites skip with
 * the reason, except under CI=true, where that is a failure.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

const HOST = process.env.GATEHOUSE_TEST_PGHOST ?? '127.0.0.1:5432';
const USERS = process.env.GATEHOUSE_TEST_PGUSER !== undefined ? [process.env.GATEHOUSE_TEST_PGUSER] : ['postgres', 'root'];

async function adminClient(): Promise<{ client: pg.Client; user: string } | { error: string }> {
  const errors: string[] = [];
  for (const user of USERS) {
    const client = new pg.Client({ connectionString: `postgres://${user}@${HOST}/postgres`, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      return { client, user };
    } catch (err) {
      errors.push(`${user}: ${(err as Error).message}`);
      await client.end().catch(() => {});
    }
  }
  return { error: `PostgreSQL at ${HOST} is not usable (${errors.join('; ')})` };
}

/** A fresh database, or the reason there is none (throws under CI=true instead). */
export async function createTestDatabase(): Promise<TestDatabase | { skip: string }> {
  const admin = await adminClient();
  if ('error' in admin) {
    if (process.env.CI === 'true') throw new Error(`${admin.error}: the PostgreSQL suite cannot be skipped under CI=true`);
    process.stdout.write(`# skipping the PostgreSQL suite: ${admin.error}\n`);
    return { skip: admin.error };
  }
  const name = `gatehouse_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.client.query(`CREATE DATABASE ${name}`);
  await admin.client.end();
  return {
    url: `postgres://${admin.user}@${HOST}/${name}`,
    async drop() {
      const again = await adminClient();
      if ('error' in again) return;
      await again.client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await again.client.end();
    },
  };
}
