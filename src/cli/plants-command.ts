import { type CommandContext, helpText, runSubcommand } from './command-line.js';
import { plantsExport } from './plants-export.js';
import { plantsImport } from './plants-import.js';

export const plantsHelp = helpText(
  'plantstore plants <export|import> [options]',
  'Moves plants out of and into the store named by DATABASE_URL, as JSON lines.\n' +
    'Run `plantstore plants SUBCOMMAND --help` for the options of each.',
);

export function plantsCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  return runSubcommand('plants', { export: plantsExport, import: plantsImport }, plantsHelp, argv, context);
}
