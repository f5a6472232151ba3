import { type DeliverConfig, type ServeConfig, SERVE_SETTINGS } from './setting-groups.js';
import { flagOf, type Setting, type SettingName, settings } from './settings.js';

/** Help is wrapped within this many columns, so that a terminal does not wrap a meaning back to the first column. */
const HELP_COLUMNS = 120;
/**
 * The widest the flag and variable columns get, so that a meaning keeps room for its longest word
 * (a PostgreSQL URL's form); a longer flag or variable has a line of its own, its meaning below it.
 */
const MOST_FLAG_COLUMNS = 29;
const MOST_ENV_COLUMNS = 27;

/** The lines `--help` prints: flag, variable, and the meaning with its default, wrapped in a column of its own. */
export function describeSettings(names: readonly SettingName[]): string {
  const rows = names.map((name) => ({ name, flag: `--${flagOf(settings[name])}`, env: settings[name].env }));
  const flagWidth = Math.min(MOST_FLAG_COLUMNS, Math.max(...rows.map((row) => row.flag.length)));
  const envWidth = Math.min(MOST_ENV_COLUMNS, Math.max(...rows.map((row) => row.env.length)));
  const indent = ' '.repeat(2 + flagWidth + 2 + envWidth + 2);
  const meaningWidth = HELP_COLUMNS - indent.length;
  return rows
    .map(({ name, flag, env }) => {
      const meaning = wrapWords([...settings[name].help.split(' '), `(default: ${shownDefault(name)})`], meaningWidth);
      const names = `  ${flag.padEnd(flagWidth)}  ${env.padEnd(envWidth)}  `;
      const lines = names.length > indent.length ? [names.trimEnd(), ...meaning.map((line) => `${indent}${line}`)] : [`${names}${meaning[0]}`, ...meaning.slice(1).map((line) => `${indent}${line}`)];
      return lines.join('\n');
    })
    .join('\n');
}

/** `words` in lines of at most `width` characters, a space between words (a longer word has a line of its own). */
function wrapWords(words: readonly string[], width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

/** A setting's default as `--help` and docs/configuration.md show it. */
export function shownDefault(name: SettingName): string {
  const setting: Setting<unknown> = settings[name];
  // An empty default (no headers, no attributes) is none, as an unset one is.
  return setting.default === undefined ? 'none' : showValue(setting, setting.default) || 'none';
}

/** Settings as logs and `plantstore config` show them: by variable name, secrets masked, no password. */
export function describeConfig(config: ServeConfig | DeliverConfig, names: readonly SettingName[] = SERVE_SETTINGS): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const name of names) {
    const setting: Setting<unknown> = settings[name];
    const value = (config as Partial<Record<SettingName, unknown>>)[name];
    shown[setting.env] = value === undefined ? '' : showValue(setting, value);
  }
  return shown;
}

function showValue(setting: Setting<unknown>, value: unknown): string {
  return setting.show === undefined ? String(value) : setting.show(value);
}
