import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

// The store holds token hashes and webhook secrets: its files are its user's alone, whatever the umask. SQLite gives a new
// -wal or -shm file the database file's mode (os_unix.c, robust_open), so a database file made 0600 first keeps all three private.
const PRIVATE_FILE = 0o600;
const PRIVATE_FOLDER = 0o700;

/** Makes `folder` and its missing parents, 0700 each; folders that exist are left as they are. */
export function makePrivateFolders(folder: string): void {
  const first = mkdirSync(folder, { recursive: true, mode: PRIVATE_FOLDER });
  if (first === undefined) return;
  // A umask only narrows mkdir's mode: chmod makes it exact.
  for (let made = folder; ; made = dirname(made)) {
    chmodSync(made, PRIVATE_FOLDER);
    if (made === first || made === dirname(made)) return;
  }
}

/** Makes `path` an empty file, 0600 from its first moment, unless a file is there; SQLite takes an empty file for a new database. */
export function makePrivateFile(path: string): void {
  try {
    makeNewPrivateFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Makes `path` an empty file, 0600 from its first moment; throws EEXIST when a file is there. */
export function makeNewPrivateFile(path: string): void {
  const fd = openSync(path, 'wx', PRIVATE_FILE);
  try {
    fchmodSync(fd, PRIVATE_FILE);
  } finally {
    closeSync(fd);
  }
}

export interface OpenFile {
  readonly path: string;
  readonly mode: number;
}

/** The store's files (the database, its -wal and -shm) that users other than their owner may open. */
export function filesOpenToOthers(path: string): OpenFile[] {
  const open: OpenFile[] = [];
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    let mode: number;
    try {
      mode = statSync(file).mode & 0o777;
    } catch {
      continue; // -wal and -shm exist only while a connection is open
    }
    if ((mode & 0o077) !== 0) open.push({ path: file, mode });
  }
  return open;
}
