import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type DatabaseLocation, loadSettings } from '../config/config.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { isPartOfStore, StoreFileRefused } from '../store/sqlite/store-files.js';
import { type CommandContext, CommandFailed, helpText, parseCommandLine, UsageError, withStore } from './command-line.js';
import { terminalJson, terminalText } from './terminal-text.js';

export const backupHelp = helpText(
  'plantstore backup FILE [--force] [--json] [options]',
  'Writes a consistent copy of the SQLite store to FILE while servers go on serving and creating.\n' +
    'The copy is one file, made 0600 under a temporary name beside FILE, checked with SQLite\'s\n' +
    'integrity check, written to the disk, then renamed to FILE; on a failure FILE is left as it was.\n' +
    'An existing FILE is replaced only with --force. Prints the plants the copy holds and its size;\n' +
    'with --json, one object with file, plants, bytes and schemaVersion. Restore it with\n' +
    '`plantstore restore FILE`. A PostgreSQL store is refused: use pg_dump there.',
  ['database'],
);

/** The one line that sends a PostgreSQL operator to the tools made for it. */
export const POSTGRES_BACKUPS =
  'backup and restore copy SQLite stores; back up PostgreSQL with pg_dump, or pg_basebackup or pgBackRest for point-in-time recovery (docs/operations.md#backup-and-restore)';

export async function backupCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { force: { type: 'boolean' }, json: { type: 'boolean' } },
    settingNames: ['database'],
    positionals: 1,
  });
  if (values.help) {
    context.stdout.write(backupHelp);
    return 0;
  }
  const [given] = positionals;
  if (given === undefined) throw new UsageError('backup needs FILE, the file to write');
  const store = sqlitePath(loadSettings(['database'], { env: context.env, flags: values as Record<string, string | undefined> }).database);
  const file = resolve(given);
  // Before the store opens: a name taken is the commonest mistake, and the cheapest to refuse.
  if (isPartOfStore(file, store)) throw new CommandFailed(`${file} is the store itself, or one of its files; back up to another file`);
  if (existsSync(file) && !values.force) throw new CommandFailed(`${file} exists; --force replaces it`);
  return withStore(values, context, async (opened) => {
    if (!(opened instanceof SqliteStore)) throw new CommandFailed(POSTGRES_BACKUPS);
    const backup = await opened.backup(file, { replace: values.force === true }).catch((error: unknown) => {
      throw failure(error, `cannot back up to ${file}`);
    });
    if (values.json) {
      const { plants, bytes, schemaVersion } = backup;
      context.stdout.write(terminalJson(`${JSON.stringify({ file, plants, bytes, schemaVersion }, null, 2)}\n`));
    } else {
      context.stdout.write(
        `backed up ${backup.plants} plant${backup.plants === 1 ? '' : 's'} to ${terminalText(file)}\n` +
          `size: ${readableSize(backup.bytes)} (${backup.bytes} bytes)\nschema version: ${backup.schemaVersion}\n`,
      );
    }
    return 0;
  });
}

/** The path of a SQLite store; the one line for any other. */
export function sqlitePath(database: DatabaseLocation): string {
  if (database.kind !== 'sqlite') throw new CommandFailed(POSTGRES_BACKUPS);
  if (database.path === ':memory:') throw new CommandFailed('an in-memory store lives and dies with its process: there is nothing to back up or restore');
  return database.path;
}

/** A refusal as it stands; any other error after `doing`, in its first line. */
export function failure(error: unknown, doing: string): Error {
  if (error instanceof StoreFileRefused) return new CommandFailed(error.message);
  const message = error instanceof Error ? error.message : String(error);
  return new CommandFailed(`${doing}: ${message.split('\n')[0]}`);
}

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'];

/** `bytes` in the largest binary unit under which it is at least 1, with one decimal: 37.0 MiB. */
export function readableSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let size = bytes / 1024;
  let unit = 0;
  while (size >= 1024 && unit < UNITS.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${size.toFixed(1)} ${UNITS[unit]}`;
}
