import { type ServeConfig, SERVE_SETTINGS } from './setting-groups.js';
import { flagOf, type Setting, type SettingName, settings } from './settings.js';

/**
 * The lines `--help` prints for these settings: flag, variable and meaning
 * with the default, in columns as wide as the longest flag and variable.
 */
export function describeSettings(names: readonly SettingName[]): string {
  const rows = names.map((name) => ({ name, flag: `--${flagOf(settings[name])}`, env: settings[name].env }));
  const flagWidth = Math.max(...rows.map((row) => row.flag.length));
  const envWidth = Math.max(...rows.map((row) => row.env.length));
  return rows
    .map(({ name, flag, env }) => `  ${flag.padEnd(flagWidth)} ${env.padEnd(envWidth)} ${settings[name].help} (default: ${shownDefault(name)})`)
    .join('\n');
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
