import { open } from 'node:fs/promises';
import { loadSettings, STORE_SETTINGS } from '../config/config.js';
import { ServiceError } from '../errors.js';
import { bodyTooLarge, toServiceError } from '../http/error-answer.js';
import { readNewPlant } from '../http/read-new-plant.js';
import { checkStorablePlant, plantConflict } from '../plants/create-plant.js';
import { newPlantToJson, type NewPlant } from '../plants/plant.js';
import type { Store } from '../store/store.js';
import { batchSize, type CommandContext, CommandFailed, helpText, parseCommandLine, UsageError, withStore } from './command-line.js';
import { type InputLine, inputLines } from './input-lines.js';
import { Progress } from './progress.js';
import { terminalJson, terminalText } from './terminal-text.js';

const IMPORT_SETTINGS = [...STORE_SETTINGS, 'bodyLimit'] as const;

export const plantsImportHelp = helpText(
  'plantstore plants import FILE|- [--batch-size N] [--json] [options]',
  'Stores the plants of FILE (stdin for -): one JSON object a line, as `plants export` writes them.\n' +
    'Import restores plants, it does not create them: it writes no webhook messages.\n' +
    'Each line is checked as POST /plants checks a body (at most BODY_LIMIT bytes, the same schema),\n' +
    'and a bad line is reported with its number and the message the API would answer; blank lines\n' +
    'are skipped. A plant stored already with the same name and tag counts as already present, so an\n' +
    'import can be run again. A line whose id the store holds with another name or tag is a conflict:\n' +
    'the stored plant stays as it is. Every good line is stored, in batches of --batch-size (default\n' +
    '1000), each one transaction; the command then exits 1 if a line was bad or in conflict, else 0.\n' +
    'With --json: the counts, and the first problems, as one object on stdout. A store that does not\n' +
    'exist is made.',
  IMPORT_SETTINGS,
);

const DEFAULT_BATCH = 1000;
/** Problems listed, on stderr and in --json; every one is counted. */
const MAX_LISTED_PROBLEMS = 20;

/** A line that was not imported: bad, or in conflict with the plant `stored`. */
interface Problem {
  line: number;
  error: ServiceError;
  stored?: NewPlant;
}

interface Tally {
  lines: number;
  created: number;
  alreadyPresent: number;
  conflicts: number;
  invalid: number;
  transactions: number;
}

export async function plantsImport(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {
    options: { 'batch-size': { type: 'string' }, json: { type: 'boolean' } },
    settingNames: IMPORT_SETTINGS,
    positionals: 1,
  });
  if (values.help) {
    context.stdout.write(plantsImportHelp);
    return 0;
  }
  const name = positionals[0];
  if (name === undefined) throw new UsageError('plants import needs the FILE to read, or - for stdin');
  const plantsPerBatch = batchSize(values['batch-size'], DEFAULT_BATCH);
  const { bodyLimit } = loadSettings(['bodyLimit'], { env: context.env, flags: values as Record<string, string | undefined> });
  // The input first: a name mistyped stops the command before it opens, or makes, a store.
  const input = await openInput(name, context);
  try {
    // A restore often goes to a new store, so the import may make one (and says so on stderr).
    return await withStore(values, context, async (store) => {
      const tally = await importLines(store, input, { plantsPerBatch, bodyLimit, json: values.json ?? false }, context);
      const refused = tally.conflicts + tally.invalid;
      if (refused > 0) {
        throw new CommandFailed(`${refused} lines were not imported (${tally.conflicts} conflicts, ${tally.invalid} invalid); the other plants are stored`);
      }
      return 0;
    }, { mayCreate: true });
  } finally {
    await input.close();
  }
}

interface Input {
  lines: AsyncIterable<Buffer | string>;
  /** Its size in bytes, when known: a file's, not a pipe's. */
  size: bigint | undefined;
  close(): Promise<void>;
}

async function openInput(name: string, context: CommandContext): Promise<Input> {
  if (name === '-') return { lines: context.stdin as AsyncIterable<Buffer | string>, size: undefined, close: async () => undefined };
  let handle;
  try {
    handle = await open(name, 'r');
  } catch (error) {
    throw new CommandFailed(`cannot read ${name}: ${(error as Error).message}`);
  }
  const stat = await handle.stat();
  if (stat.isDirectory()) {
    await handle.close();
    throw new CommandFailed(`cannot read ${name}: it is a directory`);
  }
  // A FIFO or a device has no size to show progress against.
  return { lines: handle.createReadStream({ autoClose: false }), size: stat.isFile() ? BigInt(stat.size) : undefined, close: () => handle.close() };
}

async function importLines(
  store: Store,
  input: Input,
  options: { plantsPerBatch: number; bodyLimit: number; json: boolean },
  context: CommandContext,
): Promise<Tally> {
  const tally: Tally = { lines: 0, created: 0, alreadyPresent: 0, conflicts: 0, invalid: 0, transactions: 0 };
  const problems: Problem[] = [];
  const note = (problem: Problem) => {
    if (problems.length < MAX_LISTED_PROBLEMS) problems.push(problem);
  };
  const progress = new Progress(context.stderr, 'plants import (bytes)', input.size);
  let batch: { plant: NewPlant; line: number }[] = [];
  let read = 0;
  /** The last line of the last batch committed: every line up to it is stored or reported. */
  let settled = 0;

  const write = async () => {
    const results = await store.importPlants(batch.map((entry) => entry.plant));
    tally.transactions += 1;
    results.forEach((result, i) => {
      const { plant, line } = batch[i]!;
      if (result.outcome === 'created') tally.created += 1;
      else if (result.outcome === 'replayed') tally.alreadyPresent += 1;
      else {
        tally.conflicts += 1;
        note({ line, error: plantConflict(plant.id), stored: result.existing });
      }
    });
    settled = batch.at(-1)!.line;
    batch = [];
    progress.update(BigInt(read));
  };

  try {
    for await (const line of inputLines(input.lines, options.bodyLimit)) {
      tally.lines = line.number;
      read = line.end;
      const plant = plantOfLine(line, options.bodyLimit);
      if (plant === undefined) continue;
      if (plant instanceof ServiceError) {
        tally.invalid += 1;
        note({ line: line.number, error: plant });
        continue;
      }
      batch.push({ plant, line: line.number });
      // Awaited before the next line is read: the input waits for the store, one batch in memory.
      if (batch.length === options.plantsPerBatch) await write();
    }
    if (batch.length > 0) await write();
  } catch (error) {
    listProblems(problems, context);
    context.stderr.write(`plants import: stopped after line ${settled}: the lines up to it are stored or listed above, and running the import again is safe\n`);
    throw error;
  }
  progress.update(BigInt(read), true);
  listProblems(problems, context);
  const refused = tally.conflicts + tally.invalid;
  if (refused > problems.length) context.stderr.write(`plants import: ${refused - problems.length} more lines not imported, not listed\n`);
  context.stderr.write(
    `plants import: ${tally.lines} lines: ${tally.created} created, ${tally.alreadyPresent} already present, ` +
      `${tally.conflicts} conflicts, ${tally.invalid} invalid, in ${tally.transactions} transactions\n`,
  );
  if (options.json) {
    const problemsShown = problems.map(({ line, error }) => ({ line, code: error.code, message: error.message }));
    context.stdout.write(`${terminalJson(JSON.stringify({ ...tally, problems: problemsShown }))}\n`);
  }
  return tally;
}

/** A line's plant, checked as POST /plants checks a body, or the error the API would answer; undefined for a blank line. */
function plantOfLine(line: InputLine, bodyLimit: number): NewPlant | ServiceError | undefined {
  if (line.text === undefined) return bodyTooLarge(bodyLimit);
  // JSON's own whitespace (the newline is gone already): a line of anything else is not blank, and not JSON.
  if (/^[ \t\r]*$/.test(line.text)) return undefined;
  try {
    const plant = readNewPlant(line.text);
    checkStorablePlant(plant);
    return plant;
  } catch (error) {
    // What the API answers 400 for; anything else is a fault of this program, and stops it.
    if (error instanceof ServiceError || error instanceof SyntaxError || error instanceof RangeError) return toServiceError(error);
    throw error;
  }
}

/** Each problem one line; the input's words (a parser's quote of it, a stored name) are shown inert. */
function listProblems(problems: readonly Problem[], context: CommandContext): void {
  for (const { line, error, stored } of problems) {
    const holder = stored === undefined ? '' : `; the store holds ${terminalJson(newPlantToJson(stored))}`;
    context.stderr.write(`plants import: line ${line}: ${terminalText(error.message)}${holder}\n`);
  }
}
