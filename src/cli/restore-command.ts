import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadSettings } from '../config/config.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { failure, sqlitePath } from './backup-command.js';
import { type CommandContext, CommandFailed, helpText, parseCommandLine, UsageError } from './command-line.js';
import { terminalText } from './terminal-text.js';

export const restoreHelp = helpText(
  'plantstore restore FILE [--force] [options]',
  'Puts the backup FILE (made by plantstore backup) in place of the SQLite store, or makes the store\n' +
    'from it when there is none. FILE must pass SQLite\'s integrity check and hold a plant store whose\n' +
    'schema this build knows. Refused while any process has the store open: stop the servers first.\n' +
    'An existing store is replaced only with --force, and what was created since the backup is lost;\n' +
    'tokens revoked since then work again. The copy is one transaction: a failed restore leaves the\n' +
    'store as it was. A PostgreSQL store is refused: restore it with its own tools.',
  ['database'],
);

export async function restoreCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, { options: { force: { type: 'boolean' } }, settingNames: ['database'], positionals: 1 });
  if (values.help) {
    context.stdout.write(restoreHelp);
    return 0;
  }
  const [given] = positionals;
  if (given === undefined) throw new UsageError('restore needs FILE, the backup to restore');
  const { database } = loadSettings(['database'], { env: context.env, flags: values as Record<string, string | undefined> });
  const store = sqlitePath(database);
  const file = resolve(given);
  if (existsSync(store) && !values.force) {
    throw new CommandFailed(`the ${database.label} exists; --force replaces it with ${file}, and what was created since that backup is lost`);
  }
  // Not through withStore: a connection of this process would hold the very lock that tells whether the store is in use.
  context.stderr.write(`plantstore: restoring ${terminalText(file)} into the ${database.label}\n`);
  const restored = await SqliteStore.restore(file, store, { replace: values.force === true }).catch((error: unknown) => {
    throw failure(error, `cannot restore ${file}`);
  });
  context.stdout.write(
    `restored ${restored.plants} plant${restored.plants === 1 ? '' : 's'} (schema version ${restored.schemaVersion}) from ${terminalText(file)}` +
      `${restored.replaced ? ', replacing what the store held' : ' into a new store'}\n`,
  );
  return 0;
}
