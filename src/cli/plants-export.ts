import { STORE_SETTINGS } from '../config/config.js';
import { newPlantToJson } from '../plants/plant.js';
import { plantPages } from '../store/store.js';
import { type CommandContext, helpText, parseCommandLine, withStore } from './command-line.js';
import { terminalJson } from './terminal-text.js';

export const plantsExportHelp = helpText(
  'plantstore plants export [options]',
  'Writes every stored plant to stdout, one JSON object a line, by ascending id; ids are exact.\n' +
    '`plantstore plants import` reads what it writes.',
  STORE_SETTINGS,
);

const PAGE_SIZE = 1000;

export async function plantsExport(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: {}, settingNames: STORE_SETTINGS });
  if (values.help) {
    context.stdout.write(plantsExportHelp);
    return 0;
  }
  return withStore(values, context, async (store) => {
    for await (const page of plantPages(store, PAGE_SIZE)) {
      // Names are the API clients' words: escaped so that they cannot drive the terminal an export is printed on.
      const lines = terminalJson(page.map((plant) => `${newPlantToJson(plant)}\n`).join(''));
      if (!context.stdout.write(lines)) await new Promise((resolve) => context.stdout.once('drain', resolve));
    }
    return 0;
  });
}
