import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import { freshPostgresDatabase, migratedPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from './postgres.js';
import { tempDir } from './temp-dir.js';

/** A kind of store the suites run against, and how to make a fresh, empty one. */
export interface Backend {
  name: 'sqlite' | 'postgres' | 'postgres through PgBouncer';
  /** The DATABASE_URL of a new empty store, removed after the test. */
  freshUrl(t: TestContext): Promise<string>;
}

export const sqlite: Backend = {
  name: 'sqlite',
  freshUrl: async (t) => `sqlite:${join(tempDir(t), 'plantstore.db')}`,
};

export const postgres: Backend = {
  name: 'postgres',
  freshUrl: freshPostgresDatabase,
};

/**
 * The DATABASE_URL of a new store that exists, empty, at the newest schema:
 * what the commands that refuse a missing store need (removed after the test).
 */
export async function existingStoreUrl(t: TestContext, backend: Backend): Promise<string> {
  if (backend === postgres) return migratedPostgresDatabase(t);
  const url = await backend.freshUrl(t);
  await (await openStore({ database: parseDatabaseUrl(url, 'test'), databasePoolSize: 1 })).close();
  return url;
}

/**
 * SQLite always; PostgreSQL too when a server answers. When none does, the
 * file says so in one skipped test named after `suite`, so that no PostgreSQL
 * variant drops out unseen (and under PLANTSTORE_TEST_POSTGRES=require it fails).
 */
export async function testBackends(suite: string): Promise<Backend[]> {
  if (await postgresReachable()) return [sqlite, postgres];
  test(`postgres: ${suite}`, { skip: POSTGRES_SKIP_REASON }, () => undefined);
  return [sqlite];
}
