import { isAbsolute, resolve } from 'node:path';

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
  /** Time a client has to send its request headers, in milliseconds; then 408 and the connection closes. */
  readonly headersTimeoutMs: number;
  /** Time a client has to send its whole request, in milliseconds; then 408 and the connection closes. */
  readonly requestTimeoutMs: number;
  /** Most connections open at once; past it new ones are closed at once. */
  readonly maxConnections: number;
  /** On SIGTERM or SIGINT, how long requests in flight may take before their connections are closed, in ms. */
  readonly shutdownGraceMs: number;
  /** Failed authentications one address may make in a window before it is answered 429. */
  readonly authFailureLimit: number;
  /** The window of `authFailureLimit`, in milliseconds. */
  readonly authFailureWindowMs: number;
  /** When set, GET /metrics asks for `Authorization: Bearer <this>`. A secret: never printed. */
  readonly metricsToken: string | undefined;
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
  workers: {
    env: 'WORKERS',
    default: 1, // processes
    help: 'processes serving on the port together',
    parse: (text, source) => parseInteger(text, source, 1, 256),
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
  return loadSettings(SERVE_SETTINGS, sources);
}

export function loadStoreConfig(sources: Sources): StoreConfig {
  return loadSettings(STORE_SETTINGS, sources);
}

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
  'authFailureLimit',
  'authFailureWindowMs',
  'metricsToken',
] as const satisfies readonly (keyof ServeConfig)[];

export const STORE_SETTINGS = ['database', 'databasePoolSize'] as const satisfies readonly (keyof StoreConfig)[];

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

/** The lines `--help` prints for these settings. */
export function describeSettings(names: readonly SettingName[]): string {
  return names
    .map((name) => {
      const setting: Setting<unknown> = settings[name];
      const shown = setting.default === undefined ? 'none' : showValue(setting, setting.default);
      return `  --${flagOf(setting).padEnd(20)} ${setting.env.padEnd(20)} ${setting.help} (default: ${shown})`;
    })
    .join('\n');
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

function parseHost(text: string, source: string): string {
  const host = text.trim();
  if (host === '' || /[\s/]/.test(host)) {
    throw new ConfigError(`${source} must be a host name or IP address, got ${JSON.stringify(text)}`);
  }
  return host;
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
