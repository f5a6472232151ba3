/** A setting that is wrong; its message is one line that names it. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
