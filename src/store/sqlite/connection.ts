import Database from 'better-sqlite3';
import { ServiceError } from '../../errors.js';

/**
 * A connection with the settings every connection to the file must have:
 * WAL, so readers never wait for the writer; synchronous=FULL, so a commit
 * returns only once it is on disk; a busy timeout, because the command line
 * and other processes write the same file.
 */
export function openConnection(path: string): Database.Database {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * SQLite's result codes for "the database cannot do this now": locked past
 * the busy timeout, disk full, I/O error, read-only file, file gone. They
 * become the domain's STORE_UNAVAILABLE (503), and the process lives on.
 */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOTADB|CORRUPT|PROTOCOL)/;

export function isUnavailable(error: { code?: unknown; message?: unknown }): boolean {
  return (
    (typeof error.code === 'string' && UNAVAILABLE.test(error.code)) ||
    (typeof error.message === 'string' && /database connection is not open/.test(error.message))
  );
}

export function translateErrors<T>(operation: () => T): T {
  try {
    return operation();
  } catch (error) {
    if (error instanceof Error && isUnavailable(error)) throw new ServiceError('STORE_UNAVAILABLE', { cause: error });
    throw error;
  }
}
