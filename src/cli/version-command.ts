import { VERSION } from '../version.js';
import { type CommandContext, helpText, parseCommandLine } from './command-line.js';

export const versionHelp = helpText('plantstore version (or plantstore --version)', "Prints this build's version, alone, on stdout.");

export async function versionCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: {} });
  context.stdout.write(values.help ? versionHelp : `${VERSION}\n`);
  return 0;
}
