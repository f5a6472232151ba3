import { randomBytes } from 'node:crypto';
import { existsSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { makeNewPrivateFile } from './private-files.js';
import {
  checkStoreFile,
  companionsOf,
  isPartOfStore,
  presentCompanions,
  removeFiles,
  type StoreFileContents,
  StoreFileRefused,
  syncToDisk,
} from './store-files.js';

export interface BackupReport extends StoreFileContents {
  file: string;
  bytes: number;
}

/** Pages a step of the copy: 4 MiB of SQLite's 4 KiB pages. The copy reads one snapshot, so the size of a step sets only how often it yields. */
const PAGES_PER_STEP = 1024;
/** How long opening the store waits for the lock of a migrating process. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Writes a consistent copy of the store to `target` while servers go on writing it: a new 0600 file beside the target, made a single
 * file, checked and synced, then renamed over it; on a failure the target is left as it was. A target with a log or journal beside
 * it, which SQLite would read into the copy, is refused.
 */
export async function backUpStore(store: string, target: string, { replace }: { replace: boolean }): Promise<BackupReport> {
  refuseTarget(store, target, replace);
  const temporary = `${target}.tmp-${randomBytes(6).toString('hex')}`;
  makeNewPrivateFile(temporary);
  let contents: StoreFileContents;
  try {
    await copySnapshot(store, temporary);
    makeSingleFile(temporary);
    contents = checkStoreFile(temporary, `the copy of ${store}`);
    syncToDisk(temporary);
    renameSync(temporary, target);
  } catch (error) {
    removeFiles([temporary, ...companionsOf(temporary)]);
    throw error;
  }
  syncToDisk(dirname(target));
  return { file: target, bytes: statSync(target).size, ...contents };
}

function refuseTarget(store: string, target: string, replace: boolean): void {
  if (!existsSync(dirname(target)) || !statSync(dirname(target)).isDirectory()) throw new StoreFileRefused(`the folder of ${target} does not exist`);
  if (isPartOfStore(target, store)) throw new StoreFileRefused(`${target} is the store itself, or one of its files; back up to another file`);
  if (existsSync(target)) {
    if (statSync(target).isDirectory()) throw new StoreFileRefused(`${target} is a folder; name the backup file`);
    if (!replace) throw new StoreFileRefused(`${target} exists`);
  }
  const [companion] = presentCompanions(target);
  if (companion !== undefined) {
    throw new StoreFileRefused(`${companion} exists: SQLite would read it into the backup when it is opened; remove it, or back up to another name`);
  }
}

/** Copies in steps from one read transaction held across them: otherwise a commit between steps restarts the copy, and under steady creates it never ends. */
async function copySnapshot(store: string, file: string): Promise<void> {
  const db = new Database(store, { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM schema_migrations').get();
    try {
      await db.backup(file, { progress: () => PAGES_PER_STEP });
    } finally {
      db.exec('COMMIT');
    }
  } finally {
    db.close();
  }
}

/** Takes the copy out of WAL mode, which it has from the store's first page, so that it is read without a log beside it. */
function makeSingleFile(file: string): void {
  const db = new Database(file, { fileMustExist: true });
  try {
    const mode = db.pragma('journal_mode = DELETE', { simple: true });
    if (mode !== 'delete') throw new Error(`the copy stayed in journal mode ${String(mode)}`);
  } finally {
    db.close();
  }
}
