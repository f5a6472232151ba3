import type { DatabaseLocation } from '../config.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** Opens the store that a validated DATABASE_URL names, migrating it to the newest schema. */
export async function openStore(location: DatabaseLocation): Promise<Store> {
  switch (location.kind) {
    case 'sqlite':
      return SqliteStore.open(location.path);
  }
}
