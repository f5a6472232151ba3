import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import { DELIVER_SETTINGS, type DeliverConfig, describeConfig, loadDeliverConfig } from '../config/config.js';
import { createLogger } from '../observability/logger.js';
import { loadTracing } from '../tracing/load-tracing.js';
import { VERSION } from '../version.js';
import { DELIVERING, isMessagesWritten, ReportedAttempts } from '../webhooks/delivery-channel.js';
import { WebhookDispatcher } from '../webhooks/webhook-dispatcher.js';
import { type CommandContext, helpText, type ParentChannel, parseCommandLine } from './command-line.js';
import { listenFailure } from './listen-failure.js';
import { stopSignal } from './stop-signal.js';
import type { Store } from '../store/store.js';
import { openNamedStore } from './store-access.js';

export const deliverHelp = helpText(
  'plantstore deliver [options]',
  'Delivers webhook messages from the store until SIGTERM or SIGINT, then hands back the messages it holds,\n' +
    'gives attempts in flight SHUTDOWN_GRACE_MS, and exits 0. Any number may run, on this machine or others;\n' +
    'serve starts one unless WEBHOOK_DELIVERY=off. With PORT (or --port), answers GET /healthz, /readyz and\n' +
    '/metrics there. Refuses a store that does not exist.',
  DELIVER_SETTINGS,
);

export async function deliverCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: {}, settingNames: DELIVER_SETTINGS });
  if (values.help) {
    context.stdout.write(deliverHelp);
    return 0;
  }
  const config = loadDeliverConfig({ env: context.env, flags: values as Record<string, string | undefined> });
  return deliver(config, context);
}

/** Until a signal, or until the server that started it is gone (its channel closes, on a crash too). */
function stopRequested(parent: ParentChannel | undefined): Promise<string> {
  if (parent === undefined) return stopSignal();
  return Promise.race([stopSignal(), new Promise<string>((resolve) => parent.once('disconnect', () => resolve('its server stopped')))]);
}

async function deliver(config: DeliverConfig, context: CommandContext): Promise<number> {
  const { parent } = context;
  const { store, note } = await openNamedStore(config, { mayCreate: false });
  const stop = stopRequested(parent);
  const log = createLogger(config.logLevel) as FastifyBaseLogger;
  const startTracing = await loadTracing(config);
  // Started by serve, it counts its attempts in serve's metrics; on its own, in a registry of its own, which
  // loads only when something reads it: a deliverer beside each server starts in about half the time.
  const own = parent === undefined || config.port !== undefined || startTracing !== undefined ? await ownMetrics(store) : undefined;
  const tracing = own === undefined ? undefined : startTracing?.(own.spans);
  // Not once the server is gone: a send on a closed channel throws.
  const reported = parent === undefined ? undefined : new ReportedAttempts((report) => parent.connected && parent.send(report));
  const metrics = reported ?? own?.webhooks;
  let stopping = false;
  const status =
    config.port === undefined || own === undefined ? undefined : await listenForStatus(config, config.port, { store, registry: own.registry, log, stopping: () => stopping });
  const dispatcher = new WebhookDispatcher(
    store.webhooks,
    {
      timeoutMs: config.webhookTimeoutMs,
      retryMinMs: config.webhookRetryMinMs,
      retryMaxMs: config.webhookRetryMaxMs,
      retryForMs: config.webhookRetryForMs,
      concurrency: config.webhookConcurrency,
      retentionMs: config.webhookRetentionMs,
      pollMs: config.webhookPollMs,
    },
    log,
    metrics,
    tracing?.deliveries,
  );
  parent?.on('message', (message) => {
    if (isMessagesWritten(message)) dispatcher.messagesWritten();
  });
  dispatcher.start();
  parent?.send(DELIVERING);
  if (parent === undefined) context.stderr.write(`plantstore: ${note}\n`);
  log.info({ version: VERSION, url: status?.origin, config: describeConfig(config, DELIVER_SETTINGS) }, 'plantstore delivering webhooks');

  const reason = await stop;
  stopping = true;
  log.info({ reason, graceMs: config.shutdownGraceMs }, 'stopping webhook deliveries: handing back held messages, finishing attempts in flight');
  await dispatcher.stop(config.shutdownGraceMs);
  reported?.stop();
  await tracing?.shutdown();
  await status?.app.close();
  await store.close();
  log.info('stopped delivering webhooks');
  // The channel would keep this process alive.
  if (parent?.connected === true) parent.disconnect();
  return 0;
}

/** The deliverer's own registry: the process, its attempts, the store's backlog and its spans. */
async function ownMetrics(store: Store) {
  const [{ collectDefaultMetrics, Registry }, { spanCounters }, { WebhookMetrics }] = await Promise.all([
    import('prom-client'),
    import('../observability/metrics.js'),
    import('../observability/webhook-metrics.js'),
  ]);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return { registry, webhooks: new WebhookMetrics(registry, store.webhooks), spans: spanCounters(registry) };
}

async function listenForStatus(config: DeliverConfig, port: number, deps: { store: Store; registry: Registry; log: FastifyBaseLogger; stopping: () => boolean }) {
  const [{ AuthFailureLimiter }, { buildStatusApp }, { authFailuresCounter }] = await Promise.all([
    import('../http/auth-failure-limiter.js'),
    import('../http/fastify/status-app.js'),
    import('../observability/metrics.js'),
  ]);
  const app = buildStatusApp({
    store: deps.store,
    registry: deps.registry,
    metricsToken: config.metricsToken,
    authFailures: new AuthFailureLimiter({ limit: config.authFailureLimit, windowMs: config.authFailureWindowMs }),
    metrics: { authFailures: authFailuresCounter(deps.registry) },
    logger: deps.log,
    stopping: deps.stopping,
  });
  try {
    const origin = await app.listen({ host: config.host, port });
    return { app, origin };
  } catch (error) {
    await deps.store.close();
    throw listenFailure(error, config.host, port);
  }
}
