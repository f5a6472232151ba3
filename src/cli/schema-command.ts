import { loadStoreConfig, STORE_SETTINGS } from '../config/config.js';
import type { SchemaState } from '../store/migration.js';
import { readSchema } from '../store/open-store.js';
import { type CommandContext, helpText, parseCommandLine } from './command-line.js';
import { missingStore, openFailure } from './store-access.js';

export const schemaHelp = helpText(
  'plantstore schema [--json] [options]',
  "Prints the store's schema version, the newest this build knows, and the steps by which serve and\n" +
    'the other commands would migrate it when they open it. Reads only: migrates and creates nothing.\n' +
    'A store newer than this build is refused by every other command; run a newer plantstore there.\n' +
    'With --json: one object with store, version, newest, state (current, behind or newer) and pending.',
  STORE_SETTINGS,
);

export async function schemaCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: { json: { type: 'boolean' } }, settingNames: STORE_SETTINGS });
  if (values.help) {
    context.stdout.write(schemaHelp);
    return 0;
  }
  const config = loadStoreConfig({ env: context.env, flags: values as Record<string, string | undefined> });
  const { label } = config.database;
  let schema: SchemaState;
  try {
    schema = await readSchema(config);
  } catch (error) {
    throw openFailure(label, error);
  }
  if (!schema.found) throw missingStore(label, schema.why);
  context.stderr.write(`plantstore: using the ${label}\n`);
  const { version, newest, pending } = schema;
  const state = version > newest ? 'newer' : pending.length > 0 ? 'behind' : 'current';
  if (values.json) {
    const steps = pending.map((step) => ({ version: step.version, name: step.name }));
    context.stdout.write(`${JSON.stringify({ store: label, version, newest, state, pending: steps }, null, 2)}\n`);
    return 0;
  }
  const migration = {
    current: 'none: the store is up to date\n',
    behind: `serve, and any other command that opens the store, first applies\n${pending.map((step) => `  ${step.version} ${step.name}\n`).join('')}`,
    newer: 'none: the store is newer than this build, which refuses to open it (serve exits 1); run a newer plantstore\n',
  }[state];
  context.stdout.write(`schema version: ${version}\nnewest this build knows: ${newest}\nmigration: ${migration}`);
  return 0;
}
