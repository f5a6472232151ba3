import { ConfigError } from './setting.js';
import { DELIVER_SETTINGS, type DeliverConfig, JWT_SETTINGS, SERVE_SETTINGS, type ServeConfig, type SettingValues, STORE_SETTINGS, type StoreConfig } from './setting-groups.js';
import { flagOf, type Setting, type SettingName, settings } from './settings.js';

// The one reader of settings, from the environment a command is given rather than `process.env`,
// so that a test can give a command its own.

export { ConfigError } from './setting.js';
export { type DatabaseLocation, parseDatabaseUrl } from './database-url.js';
export { parsePostgresUrl, type PostgresHost, type PostgresUrl, type TargetSessionAttrs } from './postgres-url.js';
export { describeConfig, describeSettings, shownDefault } from './describe.js';
export { LOG_LEVELS, type LogLevel } from './settings.js';
export {
  DELIVER_SETTINGS,
  type DeliverConfig,
  JWT_SETTINGS,
  SERVE_SETTINGS,
  type ServeConfig,
  STORE_SETTINGS,
  type StoreConfig,
  TRACING_SETTINGS,
  WEBHOOK_SETTINGS,
} from './setting-groups.js';
export { flagOf, settings } from './settings.js';

/** Raw values as given: the environment, and flags by flag name (without `--`). */
export interface Sources {
  env: Readonly<Record<string, string | undefined>>;
  flags: Readonly<Record<string, string | undefined>>;
}

export function loadServeConfig(sources: Sources): ServeConfig {
  const config = loadSettings(SERVE_SETTINGS, sources);
  checkJwtSettings(config, sources);
  checkDeliverySettings(config);
  // The whole request includes its headers, so its deadline bounds theirs; Node's HTTP server
  // applies neither as set when headersTimeout > requestTimeout.
  return Object.freeze({ ...config, headersTimeoutMs: Math.min(config.headersTimeoutMs, config.requestTimeoutMs) });
}

export function loadDeliverConfig(sources: Sources): DeliverConfig {
  const config = loadSettings(DELIVER_SETTINGS, sources);
  checkDeliverySettings(config);
  return Object.freeze({ ...config, port: isGiven(settings.port, sources) ? config.port : undefined });
}

function checkDeliverySettings(config: SettingValues<'webhookRetryMinMs' | 'webhookRetryMaxMs' | 'otelBspMaxExportBatchSize' | 'otelBspMaxQueueSize'>): void {
  if (config.webhookRetryMaxMs < config.webhookRetryMinMs) {
    throw new ConfigError(`WEBHOOK_RETRY_MAX_MS must be at least WEBHOOK_RETRY_MIN_MS (${config.webhookRetryMinMs}), got ${config.webhookRetryMaxMs}`);
  }
  if (config.otelBspMaxExportBatchSize > config.otelBspMaxQueueSize) {
    throw new ConfigError(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be at most OTEL_BSP_MAX_QUEUE_SIZE (${config.otelBspMaxQueueSize}), got ${config.otelBspMaxExportBatchSize}`);
  }
}

export function loadStoreConfig(sources: Sources): StoreConfig {
  return loadSettings(STORE_SETTINGS, sources);
}

/** Reads and validates just these settings: a flag wins over its variable, an empty variable counts as unset. */
export function loadSettings<N extends SettingName>(names: readonly N[], { env, flags }: Sources): SettingValues<N> {
  const config = {} as Record<N, unknown>;
  for (const name of names) {
    const setting: Setting<unknown> = settings[name];
    const flagName = flagOf(setting);
    const flag = flags[flagName];
    const variable = env[setting.env];
    config[name] =
      flag !== undefined
        ? setting.parse(flag, `--${flagName}`)
        : variable !== undefined && variable !== ''
          ? setting.parse(variable, setting.env)
          : setting.default;
  }
  return Object.freeze(config) as SettingValues<N>;
}

function isGiven(setting: { env: string }, { env, flags }: Sources): boolean {
  return flags[flagOf(setting)] !== undefined || (env[setting.env] ?? '') !== '';
}

function checkJwtSettings(config: ServeConfig, sources: Sources): void {
  if (config.jwtIssuer === undefined) {
    const stray = JWT_SETTINGS.find((name) => isGiven(settings[name], sources));
    if (stray !== undefined) throw new ConfigError(`${settings[stray].env} is set but JWT_ISSUER is not; set JWT_ISSUER to accept JWTs, or unset ${settings[stray].env}`);
    return;
  }
  if (config.jwtAudience === undefined) {
    // A token made for another API must never be accepted here (RFC 9068, section 4).
    throw new ConfigError('JWT_AUDIENCE is required with JWT_ISSUER: the audience the identity provider puts in tokens for this service');
  }
  if (config.jwtJwksUrl !== undefined && config.jwtJwksFile !== undefined) {
    throw new ConfigError("JWT_JWKS_FILE and JWT_JWKS_URL exclude each other: set one, or neither to use the issuer's discovery document");
  }
  if (config.jwtJwksMaxAgeMs < config.jwtJwksCooldownMs) {
    // A refresh at the max age could otherwise be held back by the cooldown, and a removed key kept longer.
    throw new ConfigError(`JWT_JWKS_MAX_AGE_MS must be at least JWT_JWKS_COOLDOWN_MS (${config.jwtJwksCooldownMs}), got ${config.jwtJwksMaxAgeMs}`);
  }
}
