import type { StoreConfig } from '../config.js';
import { PostgresStore } from './postgres/postgres-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** Opens the store that a validated DATABASE_URL names, migrating it to the newest schema. */
export async function openStore(config: StoreConfig): Promise<Store> {
  const { database } = config;
  switch (database.kind) {
    case 'sqlite':
      return SqliteStore.open(database.path);
    case 'postgres':
      return PostgresStore.open(database.url, { poolSize: config.databasePoolSize });
  }
}
