import { settings, type StoreConfig } from '../config/config.js';
import type { SchemaState, StoreOpening } from './migration.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** Where the store is, and its settings where they differ from the defaults. */
export type StoreOptions = Pick<StoreConfig, 'database'> & Partial<StoreConfig>;

/** Opens and migrates the store a validated DATABASE_URL names; a missing one is made unless `mayCreate: false` (then a StoreMissing). */
export async function openStore(config: StoreOptions, opening: StoreOpening = {}): Promise<Store> {
  const { database } = config;
  switch (database.kind) {
    case 'sqlite':
      return SqliteStore.open(database.path, opening);
    case 'postgres': {
      // Loaded only when used: an embedded-store process is spared the driver's memory.
      const { PostgresStore } = await import('./postgres/postgres-store.js');
      return PostgresStore.open(database.url, { ...postgresOptions(config), ...opening });
    }
  }
}

/** The schema of the store that a validated DATABASE_URL names, read without creating or migrating anything. */
export async function readSchema(config: StoreOptions): Promise<SchemaState> {
  const { database } = config;
  switch (database.kind) {
    case 'sqlite':
      return SqliteStore.readSchema(database.path);
    case 'postgres': {
      const { PostgresStore } = await import('./postgres/postgres-store.js');
      return PostgresStore.readSchema(database.url, postgresOptions(config));
    }
  }
}

function postgresOptions(config: StoreOptions) {
  return {
    poolSize: config.databasePoolSize ?? settings.databasePoolSize.default,
    queryTimeoutMs: config.databaseQueryTimeoutMs ?? settings.databaseQueryTimeoutMs.default,
  };
}
