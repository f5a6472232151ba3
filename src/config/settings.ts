import { type DatabaseLocation, parseDatabaseUrl } from './database-url.js';
import type { RatePolicy } from '../rate-limits/rate-policy.js';
import {
  parseBearerSecret,
  parseHost,
  parseInteger,
  parseKeyServerUrl,
  parseKeySetFile,
  parseOneOf,
  parseRateLimit,
  parseTrustProxy,
  parseWord,
} from './parsers.js';
import { defineSetting, type Setting } from './setting.js';
import { tracingSettings } from './tracing-settings.js';

export { defineSetting, type Setting } from './setting.js';

/** The values of LOG_LEVEL: pino's level names, `silent` for no lines at all. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The one description of each setting, from which settings are read, typed, listed by `--help` and shown
 * by `plantstore config`. docs/configuration.md says more of each; a test checks it lists them all.
 */
export const settings = {
  host: defineSetting({
    env: 'HOST',
    default: '127.0.0.1',
    help: 'address to listen on (0.0.0.0 for every interface)',
    parse: parseHost,
  }),
  port: defineSetting({
    env: 'PORT',
    default: 8080,
    help: 'TCP port to listen on (0 picks a free one)',
    parse: (text, source) => parseInteger(text, source, 0, 65535),
  }),
  database: defineSetting({
    env: 'DATABASE_URL',
    default: parseDatabaseUrl('sqlite:./data/plantstore.db', 'default'),
    help: 'where plants and tokens are stored: sqlite:PATH (relative, or /absolute) or postgres://USER[:PASSWORD]@HOST[:PORT][,HOST:PORT...]/DB',
    parse: parseDatabaseUrl,
    show: (location: DatabaseLocation) => location.shown,
  }),
  logLevel: defineSetting<LogLevel>({
    env: 'LOG_LEVEL',
    default: 'info',
    help: `log level: ${LOG_LEVELS.join(', ')}`,
    parse: (text, source) => parseOneOf(text, source, LOG_LEVELS),
  }),
  // Larger bodies answer 413.
  bodyLimit: defineSetting({
    env: 'BODY_LIMIT',
    default: 64 * 1024, // bytes
    help: 'largest request body accepted, in bytes',
    parse: (text, source) => parseInteger(text, source, 1, 64 * 1024 * 1024),
  }),
  tokenCacheTtlMs: defineSetting({
    env: 'TOKEN_CACHE_TTL_MS',
    // Under a second, so that a revoked token is refused within one second.
    default: 500, // milliseconds
    help: 'how long a verified token is trusted before it is looked up again, in ms (at most 1000)',
    parse: (text, source) => parseInteger(text, source, 0, 1000),
  }),
  databasePoolSize: defineSetting({
    env: 'DATABASE_POOL_SIZE',
    default: 10, // connections per process
    help: 'most connections one process opens to PostgreSQL',
    parse: (text, source) => parseInteger(text, source, 1, 1000),
  }),
  // Finds a server that stopped answering without closing (a partition, a frozen host), so that
  // the connection is dropped and, with several hosts, the primary is searched again.
  databaseQueryTimeoutMs: defineSetting({
    env: 'DATABASE_QUERY_TIMEOUT_MS',
    default: 5000, // milliseconds
    help: 'how long PostgreSQL statements in flight may go without an answer before the connections to that server are cut, in ms',
    parse: (text, source) => parseInteger(text, source, 100, 3_600_000),
  }),
  writeBatchMax: defineSetting({
    env: 'WRITE_BATCH_MAX',
    default: 512, // plants per transaction
    help: 'most plants written in one transaction (group commit)',
    parse: (text, source) => parseInteger(text, source, 1, 100_000),
  }),
  writeQueueMax: defineSetting({
    env: 'WRITE_QUEUE_MAX',
    default: 4096, // plants
    help: 'most plants waiting to be written; past it creates answer 503',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  }),
  // Past it the connection closes too. loadServeConfig lowers it to REQUEST_TIMEOUT_MS when it is more.
  headersTimeoutMs: defineSetting({
    env: 'HEADERS_TIMEOUT_MS',
    default: 10_000, // milliseconds
    help: 'time a client has to send its request headers, in ms (slow clients get 408)',
    parse: (text, source) => parseInteger(text, source, 100, 600_000),
  }),
  // Past it the connection closes too.
  requestTimeoutMs: defineSetting({
    env: 'REQUEST_TIMEOUT_MS',
    default: 30_000, // milliseconds
    help: 'time a client has to send its whole request, in ms (slow clients get 408)',
    parse: (text, source) => parseInteger(text, source, 100, 3_600_000),
  }),
  maxConnections: defineSetting({
    env: 'MAX_CONNECTIONS',
    default: 10_000, // connections per process
    help: 'most connections open at once; past it new ones are closed',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  }),
  // So that one address cannot lock the others out: at 1% of MAX_CONNECTIONS' default, taking every connection
  // needs 100 addresses (or IPv6 /64s), while a client's pool of up to 100 is never refused. The TCP peer is
  // counted, since X-Forwarded-For is not known at connect; TRUST_PROXY's proxies, carrying many clients, are exempt.
  maxConnectionsPerAddress: defineSetting({
    env: 'MAX_CONNECTIONS_PER_ADDRESS',
    default: 100, // connections per address (an IPv6 client per /64) and process
    help: 'most connections one address (IPv6: one /64) holds at once; past it new ones get 429 and are closed (0: no limit; TRUST_PROXY peers are exempt)',
    parse: (text, source) => parseInteger(text, source, 0, 1_000_000),
  }),
  // A load balancer must close an idle connection before the server does, or a request it sends as the server
  // closes it fails (a 502): so this outlasts the balancers' idle timeouts. HEADERS_TIMEOUT_MS is independent:
  // its clock starts at a request's first byte. At least a second, as Keep-Alive: timeout= counts whole seconds.
  keepAliveTimeoutMs: defineSetting({
    env: 'KEEP_ALIVE_TIMEOUT_MS',
    default: 72_000, // milliseconds: Fastify's default
    help: 'how long an idle keep-alive connection stays open, in ms; keep it above the idle timeout of a load balancer in front (60 s for AWS ALB and nginx)',
    parse: (text, source) => parseInteger(text, source, 1000, 3_600_000),
  }),
  // Past it the connections of the requests still in flight are closed.
  shutdownGraceMs: defineSetting({
    env: 'SHUTDOWN_GRACE_MS',
    default: 10_000, // milliseconds
    help: 'on SIGTERM or SIGINT, how long requests in flight may take, in ms',
    parse: (text, source) => parseInteger(text, source, 0, 600_000),
  }),
  shutdownDelayMs: defineSetting({
    env: 'SHUTDOWN_DELAY_MS',
    // Time for a load balancer polling readiness to stop sending here: a little more than its poll interval.
    default: 0, // milliseconds
    help: 'on SIGTERM or SIGINT, how long to go on serving with readiness failing before closing, in ms',
    parse: (text, source) => parseInteger(text, source, 0, 600_000),
  }),
  // Unset, X-Forwarded-For is ignored, so that a client cannot choose its own address.
  trustProxy: defineSetting({
    env: 'TRUST_PROXY',
    default: undefined,
    help: 'proxies whose X-Forwarded-For gives the client address: addresses, CIDRs, loopback (off: none)',
    parse: parseTrustProxy,
    show: (peers) => (peers === undefined ? 'off' : peers.join(',')),
  }),
  authFailureLimit: defineSetting({
    env: 'AUTH_FAILURE_LIMIT',
    default: 20, // failures per window and address
    help: 'failed authentications one address may make in a window before it gets 429',
    parse: (text, source) => parseInteger(text, source, 1, 1_000_000),
  }),
  authFailureWindowMs: defineSetting({
    env: 'AUTH_FAILURE_WINDOW_MS',
    default: 60_000, // milliseconds
    help: 'the window of AUTH_FAILURE_LIMIT, in ms',
    parse: (text, source) => parseInteger(text, source, 1000, 86_400_000),
  }),
  // One quota a client across every process and instance on the store (rate-limits/rate-limiter.ts).
  // A token's own policy (token create --rate-limit) comes first; a JWT client is counted by its sub.
  rateLimit: defineSetting<RatePolicy | undefined>({
    env: 'RATE_LIMIT',
    default: undefined,
    help: "creates a client (a token, a JWT's sub) may make, as N/DURATION (600/1m; s, m, h), unless its token has its own (off: no limit)",
    parse: parseRateLimit,
    show: (policy) => policy?.text ?? 'off',
  }),
  metricsToken: defineSetting<string | undefined>({
    env: 'METRICS_TOKEN',
    default: undefined,
    help: 'when set, GET /metrics asks for this bearer token (at least 16 characters)',
    show: () => '*****',
    parse: parseBearerSecret,
  }),
  docs: defineSetting({
    env: 'DOCS',
    default: true,
    help: 'serve the interactive API reference at GET /docs: on or off',
    show: (on) => (on ? 'on' : 'off'),
    parse: (text, source) => parseOneOf(text, source, ['on', 'off'] as const) === 'on',
  }),
  // node:cluster; 1 serves in this process, without forking.
  workers: defineSetting({
    env: 'WORKERS',
    default: 1, // processes
    help: 'processes serving on the port together',
    parse: (text, source) => parseInteger(text, source, 1, 256),
  }),
  jwtIssuer: defineSetting<string | undefined>({
    env: 'JWT_ISSUER',
    default: undefined,
    help: "accept JWT access tokens from this OpenID Connect issuer (its exact iss), beside the store's tokens",
    parse: parseKeyServerUrl,
  }),
  jwtAudience: defineSetting<string | undefined>({
    env: 'JWT_AUDIENCE',
    default: undefined,
    help: "what a JWT's aud must hold (required with JWT_ISSUER)",
    parse: (text, source) => parseWord(text, source, 'an audience'),
  }),
  jwtJwksUrl: defineSetting<string | undefined>({
    env: 'JWT_JWKS_URL',
    default: undefined,
    help: "the issuer's key set (JWKS); unset, taken from <JWT_ISSUER>/.well-known/openid-configuration",
    parse: parseKeyServerUrl,
  }),
  // For installs that cannot reach the issuer (air-gapped). Excludes JWT_JWKS_URL.
  jwtJwksFile: defineSetting<string | undefined>({
    env: 'JWT_JWKS_FILE',
    default: undefined,
    help: 'a key set (JWKS) in a local file, in place of fetching one',
    parse: parseKeySetFile,
  }),
  jwtScope: defineSetting({
    env: 'JWT_SCOPE',
    default: 'plants:write',
    help: 'the scope a JWT must grant (in scope or scp) to create plants',
    parse: (text, source) => parseWord(text, source, 'one scope'),
  }),
  jwtClockSkewS: defineSetting({
    env: 'JWT_CLOCK_SKEW_S',
    default: 30, // seconds
    help: "leeway for a JWT's exp, nbf and iat against this clock, in seconds",
    parse: (text, source) => parseInteger(text, source, 0, 600),
  }),
  jwtJwksCooldownMs: defineSetting({
    env: 'JWT_JWKS_COOLDOWN_MS',
    default: 30_000, // milliseconds
    help: 'least time between two fetches of the key set, failed ones included, in ms',
    parse: (text, source) => parseInteger(text, source, 100, 3_600_000),
  }),
  // The longest a fetched key set is trusted before it is fetched again; at least JWT_JWKS_COOLDOWN_MS.
  jwtJwksMaxAgeMs: defineSetting({
    env: 'JWT_JWKS_MAX_AGE_MS',
    default: 600_000, // milliseconds
    help: 'a key removed from the key set stops being accepted within this, in ms',
    parse: (text, source) => parseInteger(text, source, 100, 86_400_000),
  }),
  webhookTimeoutMs: defineSetting({
    env: 'WEBHOOK_TIMEOUT_MS',
    default: 10_000, // milliseconds
    help: 'longest a webhook delivery attempt may take before it is retried, in ms',
    parse: (text, source) => parseInteger(text, source, 10, 600_000),
  }),
  webhookRetryMinMs: defineSetting({
    env: 'WEBHOOK_RETRY_MIN_MS',
    default: 1000, // milliseconds
    help: 'the first webhook retry delay, and the least of any, in ms',
    parse: (text, source) => parseInteger(text, source, 1, 86_400_000),
  }),
  webhookRetryMaxMs: defineSetting({
    env: 'WEBHOOK_RETRY_MAX_MS',
    default: 3_600_000, // milliseconds
    help: 'the longest wait between two webhook attempts, in ms (at least WEBHOOK_RETRY_MIN_MS)',
    parse: (text, source) => parseInteger(text, source, 1, 86_400_000),
  }),
  webhookRetryForMs: defineSetting({
    env: 'WEBHOOK_RETRY_FOR_MS',
    default: 3 * 24 * 3_600_000, // milliseconds: 3 days
    help: "how long after its plant's commit (or its resend) a webhook message is retried before it is marked failed, in ms",
    parse: (text, source) => parseInteger(text, source, 0, 90 * 86_400_000),
  }),
  webhookConcurrency: defineSetting({
    env: 'WEBHOOK_CONCURRENCY',
    default: 32, // attempts per subscription and process
    help: 'webhook attempts in flight at once per subscription, in each process',
    parse: (text, source) => parseInteger(text, source, 1, 1000),
  }),
  webhookRetentionMs: defineSetting({
    env: 'WEBHOOK_RETENTION_MS',
    default: 7 * 24 * 3_600_000, // milliseconds: 7 days
    help: 'how long delivered and failed webhook messages are kept, in ms',
    parse: (text, source) => parseInteger(text, source, 0, 365 * 86_400_000),
  }),
  // Off for a fleet whose deliverers run apart (`plantstore deliver`): serve then sends nothing.
  webhookDelivery: defineSetting({
    env: 'WEBHOOK_DELIVERY',
    default: true,
    help: 'serve starts one webhook deliverer process beside its servers, at a lower priority: on or off',
    show: (on) => (on ? 'on' : 'off'),
    parse: (text, source) => parseOneOf(text, source, ['on', 'off'] as const) === 'on',
  }),
  // A server tells its own deliverer of the messages it commits; the poll finds the rest.
  webhookPollMs: defineSetting({
    env: 'WEBHOOK_POLL_MS',
    default: 1000, // milliseconds
    help: 'how often a deliverer looks for webhook messages its server did not tell it of, and for retries that came due, in ms',
    parse: (text, source) => parseInteger(text, source, 10, 600_000),
  }),
  ...tracingSettings,
};

export type SettingName = keyof typeof settings;

/** The type of a setting's value, as its parser returns it and its default is. */
export type SettingValue<N extends SettingName> = (typeof settings)[N] extends Setting<infer T> ? T : never;

/** A setting's command-line flag, without its dashes. */
export function flagOf(setting: { env: string }): string {
  return setting.env.toLowerCase().replaceAll('_', '-');
}
