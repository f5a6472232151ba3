import { loadSettings, parseDatabaseUrl } from '../config/config.js';
import { newPlantToJson, type NewPlant } from '../plants/plant.js';
import { plantPages, type Store } from '../store/store.js';
import { batchSize, type CommandContext, CommandFailed, helpText, parseCommandLine, UsageError } from './command-line.js';
import { Progress } from './progress.js';
import { openNamedStore } from './store-access.js';
import { terminalJson } from './terminal-text.js';

export const copyHelp = helpText(
  'plantstore copy --from URL --to URL [--batch-size N]',
  'Copies every token and plant from one store to another, for example from SQLite to PostgreSQL.\n' +
    'Plants go in batches of --batch-size (default 1000), each batch one transaction. A plant already\n' +
    'in the target with the same content is skipped, so an interrupted copy is simply run again.\n' +
    'A plant whose id the target holds with other content is a conflict: it is listed and the\n' +
    'command exits 1. At the end the counts are checked. Stop servers writing to the source first\n' +
    'for a final copy, or run the copy again after they stopped. The source must exist; the target\n' +
    'is made when it does not.',
  ['databasePoolSize', 'databaseQueryTimeoutMs'],
);

const DEFAULT_BATCH = 1000;
const MAX_LISTED_CONFLICTS = 10;

export async function copyCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, {
    options: { from: { type: 'string' }, to: { type: 'string' }, 'batch-size': { type: 'string' } },
    settingNames: ['databasePoolSize', 'databaseQueryTimeoutMs'],
  });
  if (values.help) {
    context.stdout.write(copyHelp);
    return 0;
  }
  if (values.from === undefined || values.to === undefined) throw new UsageError('copy needs --from URL and --to URL');
  const plantsPerBatch = batchSize(values['batch-size'], DEFAULT_BATCH);
  // Only the pool size: DATABASE_URL, the store a server would use, plays no part in a copy.
  const storeSettings = loadSettings(['databasePoolSize', 'databaseQueryTimeoutMs'], { env: context.env, flags: values as Record<string, string | undefined> });
  const from = parseDatabaseUrl(values.from, '--from');
  const to = parseDatabaseUrl(values.to, '--to');
  if (from.url === to.url) throw new UsageError('--from and --to name the same store');

  // The source first: when it does not exist, the copy stops before it makes a target.
  const source = await openNamedStore({ ...storeSettings, database: from }, { mayCreate: false });
  try {
    context.stderr.write(`plantstore: --from: ${source.note}\n`);
    const target = await openNamedStore({ ...storeSettings, database: to }, { mayCreate: true });
    try {
      context.stderr.write(`plantstore: --to: ${target.note}\n`);
      return await copy(source.store, target.store, plantsPerBatch, context);
    } finally {
      await target.store.close();
    }
  } finally {
    await source.store.close();
  }
}

async function copy(source: Store, target: Store, batchSize: number, context: CommandContext): Promise<number> {
  const tokens = await source.exportTokens();
  const newTokens = await target.importTokens(tokens);
  context.stderr.write(`copy: ${tokens.length} tokens (${newTokens} new)\n`);

  const total = await source.countPlants();
  const progress = new Progress(context.stderr, 'copy: plants', total);
  let copied = 0n;
  let created = 0n;
  const conflicts: { plant: NewPlant; existing: NewPlant }[] = [];
  for await (const page of plantPages(source, batchSize)) {
    const results = await target.createPlants(page);
    results.forEach((result, i) => {
      if (result.outcome === 'conflict') conflicts.push({ plant: page[i]!, existing: result.existing });
      else copied += 1n;
      if (result.outcome === 'created') created += 1n;
    });
    progress.update(copied + BigInt(conflicts.length));
  }
  progress.update(copied + BigInt(conflicts.length), true);

  const held = await target.countPlants();
  context.stderr.write(`copy: ${copied} plants copied (${created} new, ${copied - created} already there); the target holds ${held}\n`);
  if (conflicts.length > 0) {
    for (const { plant, existing } of conflicts.slice(0, MAX_LISTED_CONFLICTS)) {
      context.stderr.write(terminalJson(`copy: conflict: source ${newPlantToJson(plant)}, target ${newPlantToJson(existing)}\n`));
    }
    throw new CommandFailed(`${conflicts.length} plants conflict with different plants under the same id in the target`);
  }
  if (copied < total || held < copied) {
    throw new CommandFailed(`count check failed: the source had ${total} plants, ${copied} were copied, the target holds ${held}`);
  }
  return 0;
}
