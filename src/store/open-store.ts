import { settings, type StoreConfig } from '../config.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** Where the store is, and its settings where they differ from the defaults. */
export type StoreOptions = Pick<StoreConfig, 'database'> & Partial<StoreConfig>;

/** Opens the store that a validated DATABASE_URL names, migrating it to the newest schema. */
export async function openStore(config: StoreOptions): Promise<Store> {
  const { database } = config;
  switch (database.kind) {
    case 'sqlite':
      return SqliteStore.open(database.path);
    case 'postgres': {
      // Loaded only when used: the driver costs an embedded-store process about 15 MiB.
      const { PostgresStore } = await import('./postgres/postgres-store.js');
      return PostgresStore.open(database.url, {
        poolSize: config.databasePoolSize ?? settings.databasePoolSize.default,
        queryTimeoutMs: config.databaseQueryTimeoutMs ?? settings.databaseQueryTimeoutMs.default,
      });
    }
  }
}
