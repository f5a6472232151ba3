import { closeSync, existsSync, fsyncSync, openSync, realpathSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { migrations, schemaVersion } from './migrations.js';

/** A backup or restore that must not go ahead, or a file that is no sound store: its message says which and why. */
export class StoreFileRefused extends Error {
  override name = 'StoreFileRefused';
}

export interface StoreFileContents {
  plants: number;
  schemaVersion: number;
}

/** The files SQLite keeps beside a database; whoever opens it next reads a log or journal left there into it, whatever database it came from. */
export function companionsOf(path: string): string[] {
  return [`${path}-wal`, `${path}-shm`, `${path}-journal`];
}

/** Whether `candidate` names the store at `store` or a file SQLite keeps beside it: by name, through links, or as the same file. */
export function isPartOfStore(candidate: string, store: string): boolean {
  const parts = [store, ...companionsOf(store)];
  const name = resolvedName(candidate);
  return parts.some((part) => resolvedName(part) === name || sameFile(part, candidate));
}

/** `path` with the links of its folder resolved, so that two names of one file compare equal. */
function resolvedName(path: string): string {
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return resolve(path);
  }
}

function sameFile(a: string, b: string): boolean {
  try {
    const [first, second] = [statSync(a), statSync(b)];
    return first.dev === second.dev && first.ino === second.ino;
  } catch {
    return false;
  }
}

/** Checks, read-only, that the file passes SQLite's integrity check and holds a store whose schema this build knows; `name` names it in a refusal. */
export function checkStoreFile(path: string, name: string): StoreFileContents {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return checkStore(db, name);
  } finally {
    db.close();
  }
}

/** `checkStoreFile` on a connection that is open. */
export function checkStore(db: Database.Database, name: string): StoreFileContents {
  try {
    // One row `ok`, or up to 100 rows of problems.
    const [first] = db.pragma('integrity_check') as { integrity_check: string }[];
    if (first?.integrity_check !== 'ok') throw new StoreFileRefused(`${name} fails SQLite's integrity check: ${first?.integrity_check}`);
    const version = schemaVersion(db);
    if (version === undefined) throw new StoreFileRefused(`${name} holds no plantstore tables`);
    const newest = migrations.at(-1)!.version;
    if (version > newest) throw new StoreFileRefused(`${name} has schema version ${version}, newer than this build knows (${newest}); run a newer plantstore`);
    const { plants } = db.prepare('SELECT count(*) AS plants FROM plants').get() as { plants: number };
    return { plants, schemaVersion: version };
  } catch (error) {
    if (error instanceof Database.SqliteError) throw new StoreFileRefused(`${name} is not a sound SQLite database (${error.message})`);
    throw error;
  }
}

/** Writes what the system holds of the file or folder at `path` to the disk. */
export function syncToDisk(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function removeFiles(paths: readonly string[]): void {
  for (const path of paths) rmSync(path, { force: true });
}

export function presentCompanions(path: string): string[] {
  return companionsOf(path).filter((companion) => existsSync(companion));
}
