import type { SettingName, SettingValue } from './settings.js';

// Which settings each command reads, in the order `--help` and `plantstore config` list them.

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
] as const satisfies readonly SettingName[];

export const WEBHOOK_SETTINGS = [
  'webhookTimeoutMs',
  'webhookRetryMinMs',
  'webhookRetryMaxMs',
  'webhookRetryForMs',
  'webhookConcurrency',
  'webhookRetentionMs',
  'webhookPollMs',
] as const satisfies readonly SettingName[];

export const TRACING_SETTINGS = [
  'otelTracesExporter',
  'otelExporterOtlpEndpoint',
  'otelExporterOtlpTracesEndpoint',
  'otelExporterOtlpProtocol',
  'otelExporterOtlpHeaders',
  'otelExporterOtlpTimeout',
  'otelServiceName',
  'otelResourceAttributes',
  'otelTracesSampler',
  'otelTracesSamplerArg',
  'otelBspScheduleDelay',
  'otelBspExportTimeout',
  'otelBspMaxQueueSize',
  'otelBspMaxExportBatchSize',
] as const satisfies readonly SettingName[];

/** What `plantstore serve` reads, and `plantstore config` shows. */
export const SERVE_SETTINGS = [
  'host',
  'port',
  'database',
  'databasePoolSize',
  'databaseQueryTimeoutMs',
  'workers',
  'logLevel',
  'bodyLimit',
  'tokenCacheTtlMs',
  'writeBatchMax',
  'writeQueueMax',
  'headersTimeoutMs',
  'requestTimeoutMs',
  'maxConnections',
  'maxConnectionsPerAddress',
  'keepAliveTimeoutMs',
  'shutdownGraceMs',
  'shutdownDelayMs',
  'trustProxy',
  'authFailureLimit',
  'authFailureWindowMs',
  'rateLimit',
  'metricsToken',
  ...JWT_SETTINGS,
  ...WEBHOOK_SETTINGS,
  ...TRACING_SETTINGS,
  'webhookDelivery',
  'docs',
] as const satisfies readonly SettingName[];

/** What `plantstore deliver` reads: its store, its deliveries, and its optional HTTP port for health and metrics. */
export const DELIVER_SETTINGS = [
  'host',
  'port',
  'database',
  'databasePoolSize',
  'databaseQueryTimeoutMs',
  'logLevel',
  'shutdownGraceMs',
  'authFailureLimit',
  'authFailureWindowMs',
  'metricsToken',
  ...WEBHOOK_SETTINGS,
  ...TRACING_SETTINGS,
] as const satisfies readonly SettingName[];

/** What the commands that open the store read. */
export const STORE_SETTINGS = ['database', 'databasePoolSize', 'databaseQueryTimeoutMs'] as const satisfies readonly SettingName[];

export type ServeSettingName = (typeof SERVE_SETTINGS)[number];
export type StoreSettingName = (typeof STORE_SETTINGS)[number];

/** Settings as read for these names: one field a setting, of its value type. */
export type SettingValues<N extends SettingName> = { readonly [K in N]: SettingValue<K> };

export type ServeConfig = SettingValues<ServeSettingName>;
/** `port` is undefined unless PORT or --port was given: a deliverer listens only when asked. */
export type DeliverConfig = Omit<SettingValues<(typeof DELIVER_SETTINGS)[number]>, 'port'> & { readonly port: number | undefined };
export type StoreConfig = SettingValues<StoreSettingName>;
export type TracingConfig = SettingValues<(typeof TRACING_SETTINGS)[number]>;
