import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { schemaVersion } from './migrations.js';
import { makePrivateFile, makePrivateFolders } from './private-files.js';
import {
  checkStore,
  checkStoreFile,
  companionsOf,
  isPartOfStore,
  presentCompanions,
  removeFiles,
  type StoreFileContents,
  StoreFileRefused,
  syncToDisk,
} from './store-files.js';

export interface RestoreReport extends StoreFileContents {
  replaced: boolean;
}

/** A step of the copy: 4 MiB of SQLite's 4 KiB pages. Nothing writes the backup, so the copy never restarts. */
const PAGES_PER_STEP = 1024;

/**
 * Puts the checked backup `file` in the store (replacing one only with `replace`); a store any process has open is refused. It is
 * written into the store's own file in one transaction, not renamed over it: a process holding the old file would go on writing a
 * file that is gone, losing what it acknowledged. A log or journal beside a missing store file belongs to no store: it is removed.
 */
export async function restoreStore(file: string, store: string, { replace }: { replace: boolean }): Promise<RestoreReport> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new StoreFileRefused(`${file} does not exist or is not a file`);
  if (isPartOfStore(file, store)) throw new StoreFileRefused(`${file} is the store itself, or one of its files`);
  const backup = readBackup(file);
  const replaced = existsSync(store);
  if (replaced) {
    if (!replace) throw new StoreFileRefused(`the store ${store} exists`);
    refuseWhileOpen(store);
  } else {
    removeFiles(companionsOf(store));
    makePrivateFolders(dirname(store));
    makePrivateFile(store);
  }
  try {
    await copyInto(file, store);
  } catch (error) {
    if (!replaced) removeFiles([store, ...companionsOf(store)]);
    throw error;
  }
  const restored = settle(store);
  if (restored.plants !== backup.plants) throw new Error(`the restored store holds ${restored.plants} plants where the backup holds ${backup.plants}`);
  return { ...restored, replaced };
}

/** Checks the backup, leaving no log or shared memory beside it that the read-only check made. */
function readBackup(file: string): StoreFileContents {
  const before = new Set(presentCompanions(file));
  try {
    return checkStoreFile(file, file);
  } finally {
    removeFiles(presentCompanions(file).filter((companion) => !before.has(companion)));
  }
}

/**
 * Refuses the store when another connection has it open: each connection to a WAL store holds a shared lock from open to close, so
 * exclusive locking mode gets the file's lock only when alone (`BEGIN EXCLUSIVE` alone is a write lock that readers do not hold up).
 * The lock is let go before the copy, which is one transaction: a process opening the store meanwhile sees it before or after.
 */
function refuseWhileOpen(store: string): void {
  const db = new Database(store, { fileMustExist: true });
  let version: number | undefined;
  try {
    // An open store holds its lock for as long as it runs: waiting would not get it.
    db.pragma('busy_timeout = 0');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    version = schemaVersion(db);
    db.exec('COMMIT');
  } catch (error) {
    throw refusalFor(error, store);
  } finally {
    db.close();
  }
  if (version === undefined) throw new StoreFileRefused(`${store} holds no plantstore tables; move it aside, with any -wal and -shm beside it, and restore again`);
}

function refusalFor(error: unknown, store: string): unknown {
  const code = (error as { code?: unknown }).code;
  if (code === 'SQLITE_BUSY') return new StoreFileRefused(`another process has the store ${store} open: stop the servers (and commands) that use it first`);
  if (error instanceof Database.SqliteError) {
    return new StoreFileRefused(`the store ${store} cannot be read (${error.message}); move it aside, with any -wal and -shm beside it, and restore again`);
  }
  return error;
}

/** Copies the backup into the store file with SQLite's online backup: one write transaction of the store's connection. */
async function copyInto(file: string, store: string): Promise<void> {
  const before = new Set(presentCompanions(file));
  const backup = new Database(file, { readonly: true, fileMustExist: true });
  try {
    await backup.backup(store, { progress: () => PAGES_PER_STEP });
  } finally {
    backup.close();
    removeFiles(presentCompanions(file).filter((companion) => !before.has(companion)));
  }
}

/** Folds any log into the store file (a copy into a WAL store commits without waiting for the disk), checks it, and syncs file and folder. */
function settle(store: string): StoreFileContents {
  const db = new Database(store, { fileMustExist: true });
  let contents: StoreFileContents;
  try {
    db.pragma('synchronous = FULL');
    db.pragma('wal_checkpoint(TRUNCATE)');
    contents = checkStore(db, `the restored store ${store}`);
  } finally {
    db.close();
  }
  syncToDisk(store);
  syncToDisk(dirname(store));
  return contents;
}
