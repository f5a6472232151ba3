import { describeConfig, loadServeConfig, SERVE_SETTINGS } from '../config/config.js';
import { type CommandContext, helpText, parseCommandLine } from './command-line.js';

export const configHelp = helpText(
  'plantstore config [--json] [options]',
  'Prints the settings `plantstore serve` would run with, from the environment and these flags,\n' +
    'one VARIABLE=value a line (or JSON), with secrets masked. A wrong setting fails as serve would.',
  SERVE_SETTINGS,
);

export async function configCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: { json: { type: 'boolean' } }, settingNames: SERVE_SETTINGS });
  if (values.help) {
    context.stdout.write(configHelp);
    return 0;
  }
  const shown = describeConfig(loadServeConfig({ env: context.env, flags: values as Record<string, string | undefined> }));
  context.stdout.write(
    values.json ? `${JSON.stringify(shown, null, 2)}\n` : Object.entries(shown).map(([name, value]) => `${name}=${value}\n`).join(''),
  );
  return 0;
}
