/** A setting that is wrong; its message is one line that names it. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface Setting<T> {
  /** The environment variable; the flag is its name in lower case with hyphens (`DATABASE_URL`, `--database-url`). */
  readonly env: string;
  readonly default: T;
  /** The meaning, one line, as `--help` prints it. */
  readonly help: string;
  /** The value of `text`, or a ConfigError that names `source`, the variable or flag it came from. */
  parse(text: string, source: string): T;
  /** How a value is shown (help, logs, `plantstore config`) when not as itself: masked, or without a password. */
  show?(value: T): string;
}

/** Infers a setting's value type from its default and its parser together, so that the two agree. */
export function defineSetting<T>(setting: Setting<T>): Setting<T> {
  return setting;
}
