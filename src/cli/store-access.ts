import { ConfigError, type DatabaseLocation } from '../config/config.js';
import { ServiceError } from '../errors.js';
import { NO_DATABASE, type SchemaChange, SchemaTooNew, StoreMissing } from '../store/migration.js';
import { openStore, type StoreOptions } from '../store/open-store.js';
import { filesOpenToOthers } from '../store/sqlite/private-files.js';
import type { Store } from '../store/store.js';
import { CommandFailed } from './command-errors.js';

/** A store a command opened, and the line that names it on stderr: made, migrated or used. */
export interface NamedStore {
  store: Store;
  note: string;
  /** Whether opening made or migrated the schema. */
  changed: boolean;
}

/**
 * Opens the store for a command: without `mayCreate` a missing store is refused and nothing is made; an older schema
 * is migrated forward, as a server would. A failure is one CommandFailed line that names the store (never a password).
 */
export async function openNamedStore(config: StoreOptions, { mayCreate }: { mayCreate: boolean }): Promise<NamedStore> {
  const { label } = config.database;
  let change: SchemaChange | undefined;
  let store: Store;
  try {
    store = await openStore(config, { mayCreate, onSchemaChange: (made) => (change = made) });
  } catch (error) {
    throw openFailure(label, error);
  }
  const warning = openToOthers(config.database);
  if (change === undefined) return { store, note: `using the ${label}${warning}`, changed: false };
  if (change.from === 0) return { store, note: `created a new ${label}${warning}`, changed: true };
  return { store, note: `migrated the ${label} from schema version ${change.from} to ${change.to}${warning}`, changed: true };
}

/** The note's warning for a SQLite store others than its owner may open, or ''; its modes stay, as an operator may have chosen them. */
function openToOthers(database: DatabaseLocation): string {
  if (database.kind !== 'sqlite' || database.path === ':memory:') return '';
  const files = filesOpenToOthers(database.path).map(({ path, mode }) => `${path} (mode ${mode.toString(8).padStart(4, '0')})`);
  if (files.length === 0) return '';
  return `; warning: users other than the owner may open ${files.join(', ')}, and the store holds token hashes and webhook secrets (chmod 600)`;
}

/** What a command says when the store at `label` does not exist. */
export function missingStore(label: string, why: string): CommandFailed {
  // The service makes its store, in a PostgreSQL database that someone else made.
  const hint = why === NO_DATABASE ? '' : '; `plantstore serve` or `plantstore token create` makes one';
  return new CommandFailed(`the ${label} does not exist (${why})${hint}`);
}

/** The one line for a store that did not open. */
export function openFailure(label: string, error: unknown): Error {
  if (error instanceof ConfigError || error instanceof CommandFailed) return error;
  if (error instanceof StoreMissing) return missingStore(label, error.message);
  if (error instanceof SchemaTooNew) {
    return new CommandFailed(`the ${label} has schema version ${error.version}, newer than this build knows (${error.newest}); run a newer plantstore`);
  }
  return new CommandFailed(`cannot open the ${label}: ${reason(error)}`);
}

/** Why a driver or system call failed, in its own first line: the store's domain error says only that the store is unavailable. */
function reason(error: unknown): string {
  const cause = error instanceof ServiceError && error.cause !== undefined ? error.cause : error;
  const message = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0]!;
  const code = (cause as { code?: unknown } | undefined)?.code;
  // SQLite's own words do not say which of the file or its folder it could not open or write.
  if (typeof code === 'string' && /^SQLITE_(CANTOPEN|READONLY)/.test(code)) return `${message} (can this user write the file and its folder?)`;
  return message;
}
