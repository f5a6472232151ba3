import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { keySetProblem } from './tokens/jwt/key-set-document.js';
import { keyServerUrlProblem } from './tokens/jwt/key-server-url.js';

/**
 * Settings: every one the service has, read once from the environment and
 * the command line (a flag wins over its variable), validated, and frozen.
 * Nothing else in the code reads `process.env`.
 */
export interface ServeConfig {
  /** Address to listen on. */
  readonly host: string;
  /** TCP port to listen on; 0 picks a free one. */
  readonly port: number;
  readonly database: DatabaseLocation;
  readonly logLevel: LogLevel;
  /** Largest request body accepted, in bytes; larger ones answer 413. */
  readonly bodyLimit: number;
  /** How long a verified token is trusted before it is looked up again, in milliseconds. */
  readonly tokenCacheTtlMs: number;
  readonly databasePoolSize: number;
  /** Most plants written in one transaction. */
  readonly writeBatchMax: number;
  /** Most plants waiting for a transaction before creates are refused with 503. */
  readonly writeQueueMax: number;
  /** Processes that serve on the port together (node:cluster); 1 serves in this process. */
  readonly workers: number;
  /**
   * Time a client has to send its request headers, in milliseconds; then 408
   * and the connection closes. Never more than `requestTimeoutMs`.
   */
  readonly headersTimeoutMs: number;
  /** Time a client has to send its whole request, in milliseconds; then 408 and the connection closes. */
  readonly requestTimeoutMs: number;
  /** Most connections open at once; past it new ones are closed at once. */
  readonly maxConnections: number;
  /** On SIGTERM or SIGINT, how long requests in flight may take before their connections are closed, in ms. */
  readonly shutdownGraceMs: number;
  /**
   * On SIGTERM or SIGINT, how long to go on serving while readiness already
   * fails, before the listener closes, in ms: time for a load balancer to
   * stop sending here.
   */
  readonly shutdownDelayMs: number;
  /**
   * The peers whose `X-Forwarded-For` is believed (addresses, CIDRs, and
   * `loopback`, `linklocal`, `uniquelocal`), or undefined: the client is the
   * peer itself and `X-Forwarded-For` is ignored.
   */
  readonly trustProxy: readonly string[] | undefined;
  /** Failed authentications one address may make in a window before it is answered 429. */
  readonly authFailureLimit: number;
  /** The window of `authFailureLimit`, in milliseconds. */
  readonly authFailureWindowMs: number;
  /** When set, GET /metrics asks for `Authorization: Bearer <this>`. A secret: never printed. */
  readonly metricsToken: string | undefined;
  /** The identity provider whose JWT access tokens are accepted beside the store's tokens; unset, none are. */
  readonly jwtIssuer: string | undefined;
  /** What a JWT's `aud` must hold; required with `jwtIssuer`. */
  readonly jwtAudience: string | undefined;
  /** The issuer's key set; unset, its discovery document names it. */
  readonly jwtJwksUrl: string | undefined;
  /** A key set in a local file, in place of fetching one (air-gapped installs). */
  readonly jwtJwksFile: string | undefined;
  /** The scope a JWT must grant to create plants. */
  readonly jwtScope: string;
  /** Leeway for `exp`, `nbf` and `iat` against this machine's clock, in seconds. */
  readonly jwtClockSkewS: number;
  /** Least time between two fetches of the key set, failed ones included, in milliseconds. */
  readonly jwtJwksCooldownMs: number;
  /** Longest a fetched key set is trusted before it is fetched again, in milliseconds. */
  readonly jwtJwksMaxAgeMs: number;
  /** Whether GET /docs serves the interactive API reference. */
  readonly docs: boolean;
  /** Longest a webhook delivery attempt may take before it counts as failed, in milliseconds. */
  readonly webhookTimeoutMs: number;
  /** The first webhook retry's delay, and the least of any, in milliseconds. */
  readonly webhookRetryMinMs: number;
  /** The longest wait between two webhook attempts, in milliseconds. */
  readonly webhookRetryMaxMs: number;
  /** How long after its plant's commit a webhook message is retried before it is marked failed, in milliseconds. */
  readonly webhookRetryForMs: number;
  /** Webhook attempts in flight at once per subscription, in each process. */
  readonly webhookConcurrency: number;
  /** How long delivered and failed webhook messages are kept before they are deleted, in milliseconds. */
  readonly webhookRetentionMs: number;
  /** How often each process looks for due webhook messages when nothing wakes it, in milliseconds. */
  readonly webhookPollMs: number;
}

export interface StoreConfig {
  readonly database: DatabaseLocation;
  /** Most connections one process opens to a networked database. */
  readonly databasePoolSize: number;
}

/** A validated DATABASE_URL. `shown` is the URL with any password masked, for logs. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string; readonly url: string; readonly shown: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly shown: string };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A setting that is wrong; its message is one line that names it. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

interface Setting<T> {
  /** The environment variable; the flag is its name in lower case with hyphens (`DATABASE_URL`, `--database-url`). */
  env: string;
  default: T;
  help: string;
  parse(text: string, source: string): T;
  /** How a value is shown (help, logs, `plantstore config`) when not as itself: masked, or without a password. */
  show?(value: T): string;
}

/** Every setting, with its variable, default (and unit) and meaning. */
export const settings = {
  host: {
    env: 'HOST',
    default: '127.0.0.1',
    help: 'address to listen on (0.0.0.0 for every interface)',
    parse: parseHost,
  },
  port: {
    env: 'PORT',
    default: 8080,
    help: 'TCP port to listen on (0 picks a free one)',
    parse: (text, source) => parseInteger(text, source, 0, 65535),
  },
  database: {
    env: 'DATABASE_URL',
    default: parseDatabaseUrl('sqlite:./data/plantstore.db', 'default'),
    help: 'where plants and tokens are stored: sqlite:PATH or postgres://USER@HOST:PORT/DB',
    parse: parseDatabaseUrl,
    show: (location: DatabaseLocation) => location.shown,
  },
  logLevel: {
    env: 'LOG_LEVEL',
    default: 'info' as LogLevel,
    help: `log level: ${LOG_LEVELS.join(', ')}`,
    parse: (text, source) => parseOneOf(text, source, LOG_LEVELS),
  },
  bodyLimit: {
    env: 'BODY_LIMIT',
    default: 64 * 1024, // bytes
    help: 'largest request body accepted, in bytes',
    parse: (text, source) => parseInteger(text, source, 1, 64 * 1024 * 1024),
  },
  tokenCacheTtlMs: {
    env: 'TOKEN_CACHE_TTL_MS',
    // Under a second, so that a revoked token is refused within one second.
    default: 500, // milliseconds
    help: 'how long a verified token is trusted before it is looked up again, in ms (at most 1000)',
    parse: (text, source) => parseInteger(text, source, 0, 1000),
  },
  databasePoolSize: {
    env: 'DATABASE_POOL_SIZE',
    default: 10, // connections per process
    help: 'most connections one process opens to PostgreSQL',
    parse: (text, source) => parseInteger(text, source, 1, 1000),
  },
  writeBatchMax: {
    env: 'WRITE_BATCH_MAX',
    default: 512, // plants per transaction
    help: 'most plants written in one transaction (group commit)',
    parse: (text, source) => parseInteger(text, source, 1, 100_000),
  },
  writeQueueMax: {
    env: 'WRITE_QUEUE_MAX',
    default: 4096, // plants
    help: 'most plants waiting to be written; past it creates answer 503',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  },
  headersTimeoutMs: {
    env: 'HEADERS_TIMEOUT_MS',
    default: 10_000, // milliseconds
    help: 'time a client has to send its request headers, in ms (slow clients get 408)',
    parse: (text, source) => parseInteger(text, source, 100, 600_000),
  },
  requestTimeoutMs: {
    env: 'REQUEST_TIMEOUT_MS',
    default: 30_000, // milliseconds
    help: 'time a client has to send its whole request, in ms (slow clients get 408)',
    parse: (text, source) => parseInteger(text, source, 100, 3_600_000),
  },
  maxConnections: {
    env: 'MAX_CONNECTIONS',
    default: 10_000, // connections per process
    help: 'most connections open at once; past it new ones are closed',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  },
  shutdownGraceMs: {
    env: 'SHUTDOWN_GRACE_MS',
    default: 10_000, // milliseconds
    help: 'on SIGTERM or SIGINT, how long requests in flight may take, in ms',
    parse: (text, source) => parseInteger(text, source, 0, 600_000),
  },
  shutdownDelayMs: {
    env: 'SHUTDOWN_DELAY_MS',
    // 0 for a process run by hand; behind a load balancer, a little more than its readiness poll interval.
    default: 0, // milliseconds
    help: 'on SIGTERM or SIGINT, how long to go on serving with readiness failing before closing, in ms',
    parse: (text, source) => parseInteger(text, source, 0, 600_000),
  },
  trustProxy: {
    env: 'TRUST_PROXY',
    default: undefined as readonly string[] | undefined,
    help: 'proxies whose X-Forwarded-For gives the client address: addresses, CIDRs, loopback (off: none)',
    parse: parseTrustProxy,
    show: (peers: readonly string[] | undefined) => (peers === undefined ? 'off' : peers.join(',')),
  },
  authFailureLimit: {
    env: 'AUTH_FAILURE_LIMIT',
    default: 20, // failures per window and address
    help: 'failed authentications one address may make in a window before it gets 429',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  },
  authFailureWindowMs: {
    env: 'AUTH_FAILURE_WINDOW_MS',
    default: 60_000, // milliseconds
    help: 'the window of AUTH_FAILURE_LIMIT, in ms',
    parse: (text, source) => parseInteger(text, source, 1000, 86_400_000),
  },
  metricsToken: {
    env: 'METRICS_TOKEN',
    default: undefined as string | undefined,
    help: 'when set, GET /metrics asks for this bearer token',
    show: () => '*****',
    parse: (text, source) => {
      if (text.trim() === '' || /\s/.test(text.trim())) throw new ConfigError(`${source} must be a token without spaces`);
      return text.trim();
    },
  },
  docs: {
    env: 'DOCS',
    default: true,
    help: 'serve the interactive API reference at GET /docs: on or off',
    show: (on: boolean) => (on ? 'on' : 'off'),
    parse: (text, source) => parseOneOf(text, source, ['on', 'off'] as const) === 'on',
  },
  workers: {
    env: 'WORKERS',
    default: 1, // processes
    help: 'processes serving on the port together',
    parse: (text, source) => parseInteger(text, source, 1, 256),
  },
  jwtIssuer: {
    env: 'JWT_ISSUER',
    default: undefined as string | undefined,
    help: "accept JWT access tokens from this OpenID Connect issuer (its exact iss), beside the store's tokens",
    parse: parseKeyServerUrl,
  },
  jwtAudience: {
    env: 'JWT_AUDIENCE',
    default: undefined as string | undefined,
    help: "what a JWT's aud must hold (required with JWT_ISSUER)",
    parse: (text, source) => parseWord(text, source, 'an audience'),
  },
  jwtJwksUrl: {
    env: 'JWT_JWKS_URL',
    default: undefined as string | undefined,
    help: "the issuer's key set (JWKS); unset, taken from <JWT_ISSUER>/.well-known/openid-configuration",
    parse: parseKeyServerUrl,
  },
  jwtJwksFile: {
    env: 'JWT_JWKS_FILE',
    default: undefined as string | undefined,
    help: 'a key set (JWKS) in a local file, in place of fetching one',
    parse: parseKeySetFile,
  },
  jwtScope: {
    env: 'JWT_SCOPE',
    default: 'plants:write',
    help: 'the scope a JWT must grant (in scope or scp) to create plants',
    parse: (text, source) => parseWord(text, source, 'one scope'),
  },
  jwtClockSkewS: {
    env: 'JWT_CLOCK_SKEW_S',
    default: 30, // seconds
    help: "leeway for a JWT's exp, nbf and iat against this clock, in seconds",
    parse: (text, source) => parseInteger(text, source, 0, 600),
  },
  jwtJwksCooldownMs: {
    env: 'JWT_JWKS_COOLDOWN_MS',
    default: 30_000, // milliseconds
    help: 'least time between two fetches of the key set, failed ones included, in ms',
    parse: (text, source) => parseInteger(text, source, 100, 3_600_000),
  },
  jwtJwksMaxAgeMs: {
    env: 'JWT_JWKS_MAX_AGE_MS',
    default: 600_000, // milliseconds
    help: 'a key removed from the key set stops being accepted within this, in ms',
    parse: (text, source) => parseInteger(text, source, 100, 86_400_000),
  },
  webhookTimeoutMs: {
    env: 'WEBHOOK_TIMEOUT_MS',
    default: 10_000, // milliseconds
    help: 'longest a webhook delivery attempt may take before it is retried, in ms',
    parse: (text, source) => parseInteger(text, source, 10, 600_000),
  },
  webhookRetryMinMs: {
    env: 'WEBHOOK_RETRY_MIN_MS',
    default: 1000, // milliseconds
    help: 'the first webhook retry delay, and the least of any, in ms',
    parse: (text, source) => parseInteger(text, source, 1, 86_400_000),
  },
  webhookRetryMaxMs: {
    env: 'WEBHOOK_RETRY_MAX_MS',
    default: 3_600_000, // milliseconds
    help: 'the longest wait between two webhook attempts, in ms (at least WEBHOOK_RETRY_MIN_MS)',
    parse: (text, source) => parseInteger(text, source, 1, 86_400_000),
  },
  webhookRetryForMs: {
    env: 'WEBHOOK_RETRY_FOR_MS',
    default: 3 * 24 * 3_600_000, // milliseconds: 3 days
    help: "how long after its plant's commit a webhook message is retried before it is marked failed, in ms",
    parse: (text, source) => parseInteger(text, source, 0, 90 * 86_400_000),
  },
  webhookConcurrency: {
    env: 'WEBHOOK_CONCURRENCY',
    default: 4, // attempts per subscription and process
    help: 'webhook attempts in flight at once per subscription, in each process',
    parse: (text, source) => parseInteger(text, source, 1, 1000),
  },
  webhookRetentionMs: {
    env: 'WEBHOOK_RETENTION_MS',
    default: 7 * 24 * 3_600_000, // milliseconds: 7 days
    help: 'how long delivered and failed webhook messages are kept, in ms',
    parse: (text, source) => parseInteger(text, source, 0, 365 * 86_400_000),
  },
  webhookPollMs: {
    env: 'WEBHOOK_POLL_MS',
    default: 1000, // milliseconds
    help: 'how often each process looks for due webhook messages written elsewhere or retries that came due, in ms',
    parse: (text, source) => parseInteger(text, source, 10, 600_000),
  },
} satisfies Record<keyof ServeConfig, Setting<unknown>>;

type SettingName = keyof typeof settings;
type ValueOf<N extends SettingName> = (typeof settings)[N]['default'];

/** Raw values as given: the environment, and flags by flag name (without `--`). */
export interface Sources {
  env: Readonly<Record<string, string | undefined>>;
  flags: Readonly<Record<string, string | undefined>>;
}

export function loadServeConfig(sources: Sources): ServeConfig {
  const config = loadSettings(SERVE_SETTINGS, sources);
  checkJwtSettings(config, sources);
  if (config.webhookRetryMaxMs < config.webhookRetryMinMs) {
    throw new ConfigError(`WEBHOOK_RETRY_MAX_MS must be at least WEBHOOK_RETRY_MIN_MS (${config.webhookRetryMinMs}), got ${config.webhookRetryMaxMs}`);
  }
  // The whole request includes its headers, so its deadline bounds theirs too. Node's HTTP server
  // applies neither as set when headersTimeout > requestTimeout (REQUEST_TIMEOUT_MS=700 with the
  // default 10000 cut a slow body off after 11 s), so the smaller one is the headers' deadline.
  return Object.freeze({ ...config, headersTimeoutMs: Math.min(config.headersTimeoutMs, config.requestTimeoutMs) });
}

export function loadStoreConfig(sources: Sources): StoreConfig {
  return loadSettings(STORE_SETTINGS, sources);
}

/** The settings of JWT access tokens; each but JWT_ISSUER means something only with it. */
export const JWT_SETTINGS = [
  'jwtIssuer',
  'jwtAudience',
  'jwtJwksUrl',
  'jwtJwksFile',
  'jwtScope',
  'jwtClockSkewS',
  'jwtJwksCooldownMs',
  'jwtJwksMaxAgeMs',
] as const satisfies readonly (keyof ServeConfig)[];

/** The settings of webhook delivery. */
export const WEBHOOK_SETTINGS = [
  'webhookTimeoutMs',
  'webhookRetryMinMs',
  'webhookRetryMaxMs',
  'webhookRetryForMs',
  'webhookConcurrency',
  'webhookRetentionMs',
  'webhookPollMs',
] as const satisfies readonly (keyof ServeConfig)[];

export const SERVE_SETTINGS = [
  'host',
  'port',
  'database',
  'databasePoolSize',
  'workers',
  'logLevel',
  'bodyLimit',
  'tokenCacheTtlMs',
  'writeBatchMax',
  'writeQueueMax',
  'headersTimeoutMs',
  'requestTimeoutMs',
  'maxConnections',
  'shutdownGraceMs',
  'shutdownDelayMs',
  'trustProxy',
  'authFailureLimit',
  'authFailureWindowMs',
  'metricsToken',
  ...JWT_SETTINGS,
  ...WEBHOOK_SETTINGS,
  'docs',
] as const satisfies readonly (keyof ServeConfig)[];

export const STORE_SETTINGS = ['database', 'databasePoolSize'] as const satisfies readonly (keyof StoreConfig)[];

/** Whether a setting was given at all, by its flag or a non-empty variable. */
function isGiven(setting: { env: string }, { env, flags }: Sources): boolean {
  return flags[flagOf(setting)] !== undefined || (env[setting.env] ?? '') !== '';
}

/** The rules between the JWT settings, each broken one a line that names a setting. */
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

/** A setting's command-line flag, without its dashes. */
export function flagOf(setting: { env: string }): string {
  return setting.env.toLowerCase().replaceAll('_', '-');
}

/** Reads and validates just these settings: a flag wins over its variable, an empty variable counts as unset. */
export function loadSettings<N extends SettingName>(names: readonly N[], { env, flags }: Sources): { readonly [K in N]: ValueOf<K> } {
  const config = {} as { [K in N]: ValueOf<K> };
  for (const name of names) {
    const setting: Setting<unknown> = settings[name];
    const flagName = flagOf(setting);
    const flag = flags[flagName];
    const variable = env[setting.env];
    config[name] = (
      flag !== undefined
        ? setting.parse(flag, `--${flagName}`)
        : variable !== undefined && variable !== ''
          ? setting.parse(variable, setting.env)
          : setting.default
    ) as ValueOf<N>;
  }
  return Object.freeze(config);
}

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

function parseInteger(text: string, source: string, min: number, max: number): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${source} must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

function parseOneOf<T extends string>(text: string, source: string, allowed: readonly T[]): T {
  const value = text.trim().toLowerCase();
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${source} must be one of ${allowed.join(', ')}, got ${JSON.stringify(text)}`);
  }
  return value as T;
}

/** The names proxy-addr (Fastify's `trustProxy`) knows for address ranges. */
const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

/** `off`, or a comma-separated list of addresses, CIDRs and range names. */
function parseTrustProxy(text: string, source: string): readonly string[] | undefined {
  if (text.trim().toLowerCase() === 'off') return undefined;
  const peers = text.split(',').map((peer) => peer.trim());
  for (const peer of peers) {
    const [address = '', bits, ...rest] = peer.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const valid =
      PROXY_RANGES.includes(peer) ||
      (family !== 0 && rest.length === 0 && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= maxBits)));
    if (!valid) {
      throw new ConfigError(
        `${source} must be off or a comma-separated list of addresses, CIDRs and ${PROXY_RANGES.join(', ')}, got ${JSON.stringify(peer)}`,
      );
    }
  }
  return Object.freeze(peers);
}

function parseHost(text: string, source: string): string {
  const host = text.trim();
  if (host === '' || /[\s/]/.test(host)) {
    throw new ConfigError(`${source} must be a host name or IP address, got ${JSON.stringify(text)}`);
  }
  return host;
}

/** One word without spaces: an audience, a scope. */
function parseWord(text: string, source: string, what: string): string {
  const word = text.trim();
  if (word === '' || /\s/.test(word)) throw new ConfigError(`${source} must be ${what} without spaces, got ${JSON.stringify(text)}`);
  return word;
}

/** The URL of an issuer or key set, kept as written: an issuer is compared with a token's `iss` exactly. */
function parseKeyServerUrl(text: string, source: string): string {
  const url = text.trim();
  const problem = keyServerUrlProblem(url);
  if (problem !== undefined) throw new ConfigError(`${source} must be ${problem}, got ${JSON.stringify(text)}`);
  return url;
}

/** A readable JSON Web Key Set of public keys; the file is read again when the keys must be refreshed. */
function parseKeySetFile(text: string, source: string): string {
  const path = resolve(text.trim());
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${source} must be a readable JSON file: ${(error as Error).message.split('\n')[0]}`);
  }
  const problem = keySetProblem(document);
  if (problem !== undefined) throw new ConfigError(`${source} must hold a JSON Web Key Set: ${problem}`);
  return path;
}

/**
 * `sqlite:PATH` (relative to the working directory), `sqlite:///ABSOLUTE/PATH`,
 * or `postgres://` / `postgresql://` with what node-postgres reads from a URL
 * (`sslmode`, `application_name`, ...).
 */
export function parseDatabaseUrl(text: string, source: string): DatabaseLocation {
  const url = text.trim();
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/i.exec(url);
  if (sqlite?.[1] !== undefined) {
    const path = sqlite[1];
    return { kind: 'sqlite', path: path === ':memory:' || isAbsolute(path) ? path : resolve(path), url, shown: url };
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`${source} is not a valid PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)`);
    }
    if (parsed.password !== '') parsed.password = '*****';
    return { kind: 'postgres', url, shown: parsed.toString() };
  }
  // The text may hold a password: it is not repeated.
  throw new ConfigError(`${source} must be a database URL: sqlite:PATH or postgres://USER@HOST:PORT/DATABASE`);
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
