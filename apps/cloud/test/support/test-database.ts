import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabase, type Database } from '../../src/infra/postgres/database.ts';
import { migrate } from '../../src/infra/postgres/migrate.ts';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh, empty database on the suite's PostgreSQL server (see scripts/run-tests.ts). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = process.env.MCLOUD_TEST_ADMIN_URL ?? process.env.TEST_DATABASE_URL;
  if (!adminUrl)
    throw new Error(
      'run tests through `npm test` (scripts/run-tests.ts), which provides a PostgreSQL server',
    );
  const name = `mcloud_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export interface MigratedDatabase {
  db: Database;
  /** Ends the pool and drops the database. */
  close(): Promise<void>;
}

/** A fresh database with every migration applied, reached through a pool of `connections`. */
export async function createMigratedDatabase(connections: number): Promise<MigratedDatabase> {
  const database = await createTestDatabase();
  const db = createDatabase(database.url, connections);
  await migrate(db);
  return {
    db,
    async close() {
      await db.end();
      await database.drop();
    },
  };
}
