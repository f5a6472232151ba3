import { type ServeConfig, SERVE_SETTINGS } from './setting-groups.js';
import { flagOf, type Setting, type SettingName, settings } from './settings.js';

/** Help is wrapped within this many columns, so that a terminal does not wrap a meaning back to the first column. */
const HELP_COLUMNS = 120;
/** The narrowest a meaning's column gets, however long the flags. */
const LEAST_MEANING_COLUMNS = 40;

/**
 * The lines `--help` prints for these settings: flag, variable and meaning
 * with the default, in columns two spaces apart, as wide as the longest flag
 * and variable. A long meaning goes on in its own column on the next lines.
 */
export function describeSettings(names: readonly SettingName[]): string {
  const rows = names.map((name) => ({ name, flag: `--${flagOf(settings[name])}`, env: settings[name].env }));
  const flagWidth = Math.max(...rows.map((row) => row.flag.length));
  const envWidth = Math.max(...rows.map((row) => row.env.length));
  const indent = ' '.repeat(2 + flagWidth + 2 + envWidth + 2);
  const meaningWidth = Math.max(LEAST_MEANING_COLUMNS, HELP_COLUMNS - indent.length);
  return rows
    .map(({ name, flag, env }) => {
      const [first, ...more] = wrapWords([...settings[name].help.split(' '), `(default: ${shownDefault(name)})`], meaningWidth);
      return [`  ${flag.padEnd(flagWidth)}  ${env.padEnd(envWidth)}  ${first}`, ...more.map((line) => `${indent}${line}`)].join('\n');
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
  return setting.default === undefined ? 'none' : showValue(setting, setting.default);
}

/**
 * Settings as they may be shown (logs, `plantstore config`): every value
 * with its variable's name, secrets masked, the database URL without its password.
 */
export function describeConfig(config: ServeConfig): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const name of SERVE_SETTINGS) {
    const setting: Setting<unknown> = settings[name];
    const value = config[name];
    shown[setting.env] = value === undefined ? '' : showValue(setting, value);
  }
  return shown;
}

function showValue(setting: Setting<unknown>, value: unknown): string {
  return setting.show === undefined ? String(value) : setting.show(value);
}
