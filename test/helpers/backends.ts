import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freshPostgresDatabase, postgresReachable } from './postgres.js';
import { tempDir } from './temp-dir.js';

/** A kind of store the suites run against, and how to make a fresh, empty one. */
export interface Backend {
  name: 'sqlite' | 'postgres';
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
 * SQLite always; PostgreSQL too when a server answers. The PostgreSQL suite
 * itself says so, once, when it is skipped.
 */
export async function testBackends(): Promise<Backend[]> {
  return (await postgresReachable()) ? [sqlite, postgres] : [sqlite];
}
