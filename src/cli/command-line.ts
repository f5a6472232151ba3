import { parseArgs, type ParseArgsConfig } from 'node:util';
import { describeSettings, flagOf, loadStoreConfig, settings } from '../config/config.js';
import type { Store } from '../store/store.js';
import { EXIT, UsageError } from './command-errors.js';
import { openNamedStore } from './store-access.js';

export { CommandFailed, EXIT, UsageError } from './command-errors.js';

/** Everything a command needs from its surroundings, so that tests can run it in-process too. */
export interface CommandContext {
  env: Readonly<Record<string, string | undefined>>;
  /** What a command reads when told `-` (plants import). */
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  nodeVersion: string;
  /** The IPC channel to the process that started this one (serve, for its deliverer); undefined without one. */
  parent?: ParentChannel | undefined;
}

export interface ParentChannel extends NodeJS.EventEmitter {
  send(message: unknown): unknown;
  readonly connected: boolean;
  disconnect(): void;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parses arguments strictly (an unknown flag, a missing value or a stray positional is a UsageError); each of `settingNames` gets its flag. */
export function parseCommandLine<O extends Options>(
  argv: readonly string[],
  spec: { options: O; settingNames?: readonly (keyof typeof settings)[]; positionals?: number },
) {
  const settingFlags = Object.fromEntries(
    (spec.settingNames ?? []).map((name) => [flagOf(settings[name]), { type: 'string' as const }]),
  );
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: { ...settingFlags, ...spec.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: (spec.positionals ?? 0) > 0,
      strict: true,
    });
    if (parsed.positionals.length > (spec.positionals ?? 0)) {
      throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[spec.positionals ?? 0])}`);
    }
    return parsed;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // node:util's messages run over several sentences and lines; the first says it.
    const first = (error as Error).message.split('\n')[0]!.split('. ')[0]!;
    throw new UsageError(first.replace(/\.$/, ''));
  }
}

/** A subcommand of a command group: its own arguments in, an exit code out. */
export type Subcommand = (argv: readonly string[], context: CommandContext) => Promise<number>;

/** Runs the subcommand `argv` starts with: none is the group's help and exit 2, --help the help and exit 0, an unknown one a usage error. */
export async function runSubcommand(group: string, subcommands: Readonly<Record<string, Subcommand>>, help: string, argv: readonly string[], context: CommandContext): Promise<number> {
  const [subcommand, ...rest] = argv;
  if (subcommand === undefined || subcommand === '--help' || subcommand === '-h') {
    context.stdout.write(help);
    return subcommand === undefined ? EXIT.usage : EXIT.ok;
  }
  const run = Object.hasOwn(subcommands, subcommand) ? subcommands[subcommand] : undefined;
  if (run === undefined) {
    const names = Object.keys(subcommands);
    throw new UsageError(`unknown ${group} subcommand ${JSON.stringify(subcommand)}; expected ${names.slice(0, -1).join(', ')} or ${names.at(-1)}`);
  }
  return run(rest, context);
}

/** The most plants a command writes in one transaction. */
const MOST_BATCH = 100_000;

/** A `--batch-size` flag's value: `fallback` when absent, else a whole number from 1 to 100000. */
export function batchSize(text: string | undefined, fallback: number): number {
  const size = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(size) || size < 1 || size > MOST_BATCH) {
    throw new UsageError(`--batch-size must be a whole number from 1 to ${MOST_BATCH}, got ${JSON.stringify(text)}`);
  }
  return size;
}

/** Writes `rows` (the first one the header) as columns two spaces apart, each as wide as its widest cell. */
export function writeTable(context: CommandContext, rows: readonly (readonly string[])[]): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) context.stdout.write(`${row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()}\n`);
}

export function helpText(usage: string, description: string, settingNames: readonly (keyof typeof settings)[] = [], extra = ''): string {
  const settingsPart = settingNames.length === 0 ? '' : `\nSettings (flag, environment variable, meaning):\n${describeSettings(settingNames)}\n`;
  return `Usage: ${usage}\n\n${description}\n${extra === '' ? '' : `\n${extra}\n`}${settingsPart}`;
}

/**
 * Opens the store --database-url or DATABASE_URL names, names it on stderr, runs `work` and always closes it. A store
 * that does not exist is refused unless `mayCreate`: only commands that put something in a store (serve, token create) make one.
 */
export async function withStore(
  values: Record<string, unknown>,
  context: CommandContext,
  work: (store: Store) => Promise<number>,
  { mayCreate = false }: { mayCreate?: boolean } = {},
): Promise<number> {
  const config = loadStoreConfig({ env: context.env, flags: values as Record<string, string | undefined> });
  const { store, note } = await openNamedStore(config, { mayCreate });
  try {
    context.stderr.write(`plantstore: ${note}\n`);
    return await work(store);
  } finally {
    await store.close();
  }
}
