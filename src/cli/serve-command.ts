import type { Cluster, Worker } from 'node:cluster';
import { once } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { buildApp } from '../app.js';
import { ConfigError, describeConfig, loadServeConfig, SERVE_SETTINGS, type ServeConfig } from '../config/config.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { acceptOnMoreSockets, checkAddressFree } from '../http/server/acceptors.js';
import { checkNodeLine } from '../node-lines.js';
import { connectionDrain } from '../http/server/connection-drain.js';
import { DOCS_PATH } from '../http/fastify/docs-routes.js';
import { createLogger } from '../observability/logger.js';
import { WebhookMetrics } from '../observability/webhook-metrics.js';
import { coalesced, countReported, isAttemptsReport, isMessagesWritten, MESSAGES_WRITTEN } from '../webhooks/delivery-channel.js';
import { DelivererProcess, delivererEnv, NUDGE_GAP_MS } from './deliverer-process.js';
import { stopSignal } from './stop-signal.js';
import { IssuerMismatchError } from '../tokens/jwt/key-set-source.js';
import { VERSION } from '../version.js';
import { type CommandContext, EXIT, helpText, parseCommandLine } from './command-line.js';
import { describeFailure } from './failure.js';
import { listenFailure } from './listen-failure.js';
import { loadTracing } from '../tracing/load-tracing.js';
import { openNamedStore } from './store-access.js';
import { terminalText } from './terminal-text.js';
import { tellPrimary, WorkerReports } from './worker-reports.js';

export const serveHelp = helpText(
  'plantstore serve [options]',
  'Runs the HTTP server until SIGTERM or SIGINT, then finishes the requests in flight and exits 0.\n' +
    'With --workers N, N processes serve on the one port (node:cluster). Unless WEBHOOK_DELIVERY=off, starts one\n' +
    '`plantstore deliver` process beside them, at a lower priority. Makes the store when it does not exist,\n' +
    'and migrates an older schema; once listening, names the store on stderr. A failure at start is one line\n' +
    'on stderr and exit code 1 (2 for a wrong setting).',
  SERVE_SETTINGS,
);

/** Resolves the exit code once the server has stopped after a signal. */
export async function serveCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: {}, settingNames: SERVE_SETTINGS });
  if (values.help) {
    context.stdout.write(serveHelp);
    return 0;
  }
  const config = loadServeConfig({ env: context.env, flags: values as Record<string, string | undefined> });
  const deliveryEnv = delivererEnv(context.env, values);
  // node:cluster and the child_process it brings load only for --workers N: a single process is spared their code.
  const cluster = config.workers > 1 ? (await import('node:cluster')).default : undefined;
  const nodeLine = checkNodeLine(context.nodeVersion);
  if (nodeLine !== undefined && 'warn' in nodeLine && cluster?.isWorker !== true) context.stderr.write(`plantstore: warning: ${nodeLine.warn}\n`);
  if (cluster?.isPrimary) return superviseWorkers(config, cluster, context, deliveryEnv);
  const worker = cluster?.worker;
  try {
    return await serve(config, worker, context, deliveryEnv);
  } catch (error) {
    if (worker === undefined) throw error;
    // The primary says why, once for all its workers.
    const failure = describeFailure(error);
    await tellPrimary(worker, { plantstore: 'failed', failure });
    return failure.exitCode;
  } finally {
    // A worker's channel to its primary would keep the process alive, after a stop or a failure at start.
    cluster?.worker?.disconnect();
  }
}

async function serve(config: ServeConfig, worker: Worker | undefined, context: CommandContext, deliveryEnv: Record<string, string | undefined>): Promise<number> {
  const { store, note, changed } = await openNamedStore(config, { mayCreate: true });
  const app = buildApp(config, store, { tracing: await loadTracing(config) });
  const log = app.log;

  try {
    await app.tokenVerifier.start();
  } catch (error) {
    await store.close();
    // The provider calls itself something else than JWT_ISSUER says: a wrong setting, found at start.
    if (error instanceof IssuerMismatchError) throw new ConfigError(`JWT_ISSUER does not match the identity provider: ${error.message}`);
    throw error;
  }

  // With --workers N the first worker alone looks, so that each hint is logged once, not N times.
  const firstProcess = worker === undefined || worker.id === 1;
  const hintToken = firstProcess && !(await store.listTokens()).some((token) => token.revokedAt === null);

  const webhookMetrics = new WebhookMetrics(app.metricsRegistry, store.webhooks);
  // The deliverer's attempts count here: with --workers N, the primary passes them to every worker.
  const countAttempts = (message: unknown) => {
    if (isAttemptsReport(message)) countReported(webhookMetrics, message);
  };
  // Started before listening, so that it delivers by the time the server serves; stopped if listening fails.
  let deliverer: DelivererProcess | undefined;
  if (worker !== undefined) {
    worker.on('message', countAttempts);
    if (config.webhookDelivery) store.webhooks.onMessagesWritten(coalesced(() => worker.send(MESSAGES_WRITTEN), NUDGE_GAP_MS));
  } else if (config.webhookDelivery) {
    deliverer = new DelivererProcess(deliveryEnv, log, countAttempts);
    store.webhooks.onMessagesWritten(deliverer.messagesWritten);
    deliverer.start();
  }
  const connections = connectionDrain(app.server);
  // Listened for before listening: a signal that comes while the server starts serving stops it gracefully, rather than killing it.
  const stopRequested = stopSignal();
  // With --workers N the primary accepts for its workers, on a loop with nothing else to do.
  const moreSockets = worker === undefined;
  try {
    if (moreSockets && config.port !== 0) await checkAddressFree(config.host, config.port);
    await app.listen({ host: config.host, port: config.port, ...(moreSockets ? { reusePort: true } : {}) });
  } catch (error) {
    await deliverer?.stop(config.shutdownGraceMs);
    await store.close();
    throw listenFailure(error, config.host, config.port);
  }
  // The one socket already bound serves on its own, only slower to accept connections that come at once.
  const acceptors = moreSockets
    ? await acceptOnMoreSockets(app.server).catch((error: unknown) => {
        log.warn({ err: error }, 'accepting on one socket only: binding more failed');
        return undefined;
      })
    : undefined;
  // Once listening, so that a start that fails says one thing: why. From here to the start line nothing waits.
  if (worker === undefined) context.stderr.write(`plantstore: ${note}\n`);
  else void tellPrimary(worker, { plantstore: 'serving', note, changed });
  if (hintToken) log.warn('no API token exists yet: create one with `bin/plantstore token create --name NAME`');
  if (firstProcess && config.maxConnectionsPerAddress >= config.maxConnections) {
    // A MAX_CONNECTIONS lowered below the per-address default leaves one address free to take them all.
    log.warn(
      { maxConnections: config.maxConnections, maxConnectionsPerAddress: config.maxConnectionsPerAddress },
      'MAX_CONNECTIONS_PER_ADDRESS is not below MAX_CONNECTIONS, so one address can hold every connection: lower it (0 turns the limit off)',
    );
  }
  const docs = config.docs ? `${app.listeningOrigin}${DOCS_PATH}` : undefined;
  log.info({ version: VERSION, url: app.listeningOrigin, docs, config: describeConfig(config) }, 'plantstore serving');

  const signal = await stopRequested;
  // Readiness fails first, then the server goes on serving for the delay, so that a load balancer
  // that polls readiness stops sending here before the listener closes.
  app.stopping = true;
  if (config.shutdownDelayMs > 0) {
    log.info({ signal, delayMs: config.shutdownDelayMs }, 'stopping: not ready, serving for the shutdown delay');
    await sleep(config.shutdownDelayMs);
  }
  log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: finishing requests in flight');
  connections.closeAfterEachAnswer();
  const grace = setTimeout(() => {
    log.warn('the grace period is over: closing the connections still open');
    app.server.closeAllConnections();
  }, config.shutdownGraceMs);
  // Closing stops accepting, waits for the requests in flight and commits every queued write;
  // the deliverer meanwhile claims nothing more and records the attempts in flight.
  acceptors?.close();
  await Promise.all([app.close(), deliverer?.stop(config.shutdownGraceMs)]);
  clearTimeout(grace);
  // Last, so that the spans of the final commits are exported too.
  await app.tracing?.shutdown();
  await store.close();
  log.info({ config: describeConfig(config) }, 'stopped');
  return 0;
}

/** How long the primary waits for the report of a worker that exited before listening. */
const REPORT_WAIT_MS = 1000;

/** The primary of `--workers N`: forks N processes sharing the port, replaces one that dies while serving, and on a signal stops them all (exit 0 if all stopped cleanly). */
async function superviseWorkers(config: ServeConfig, cluster: Cluster, context: CommandContext, deliveryEnv: Record<string, string | undefined>): Promise<number> {
  const log = createLogger(config.logLevel);
  const liveWorkers = () => Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
  // One deliverer for the group, started once a worker serves; what it reports goes to every worker's metrics.
  const deliverer = config.webhookDelivery
    ? new DelivererProcess(deliveryEnv, log as FastifyBaseLogger, (report) => {
        for (const worker of liveWorkers()) if (worker.isConnected()) worker.send(report);
      })
    : undefined;
  const reports = new WorkerReports(config.workers, context.stderr);
  let stopping = false;
  /** The workers that have listened: one that dies before has failed to start, and one ended while starting has stopped cleanly. */
  const listened = new WeakSet<Worker>();
  /** The exit code of a worker that failed before listening: 2 for a wrong setting, which the primary then exits with too. */
  let failedAtStart: number | undefined;
  const fork = () => {
    const worker = cluster.fork();
    worker.once('listening', () => {
      listened.add(worker);
      deliverer?.start();
    });
    worker.on('message', (message) => {
      if (isMessagesWritten(message)) deliverer?.messagesWritten();
      else reports.received(message);
    });
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      if (!listened.has(worker)) {
        void failedToStart(worker, code);
        return;
      }
      log.error({ workerPid: worker.process.pid, code, signal }, 'a worker died; starting another');
      fork();
    });
  };

  // A worker that cannot even start (bad database, port taken) would fail again: stop instead of looping.
  const failedToStart = async (worker: Worker, code: number | null) => {
    // Its report may still be in the channel when its exit is seen; the channel closes after it.
    if (worker.isConnected()) await Promise.race([once(worker, 'disconnect'), sleep(REPORT_WAIT_MS, undefined, { ref: false })]);
    if (stopping) return;
    const failure = reports.failure(code);
    log.fatal({ workerPid: worker.process.pid, code, reason: failure.message }, 'a worker failed to start; stopping');
    context.stderr.write(`plantstore: ${terminalText(failure.message)}\n`);
    failedAtStart = failure.exitCode;
    void stopAll();
  };

  const { promise: stopped, resolve: resolveStopped } = Promise.withResolvers<number>();
  const stopAll = async () => {
    if (stopping) return;
    stopping = true;
    const workers = liveWorkers();
    const delivererStopped = deliverer?.stop(config.shutdownGraceMs);
    const codes = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<number | null>((resolve) => {
            if (worker.isDead()) return resolve(worker.process.exitCode);
            // A worker still starting when the signal comes has served nothing: ending it there is a clean stop.
            worker.once('exit', (code, signal) => resolve(code ?? (signal === 'SIGTERM' && !listened.has(worker) ? EXIT.ok : EXIT.failed)));
            worker.process.kill('SIGTERM');
          }),
      ),
    );
    await delivererStopped;
    resolveStopped(failedAtStart ?? (codes.some((code) => code !== 0) ? EXIT.failed : EXIT.ok));
  };

  for (let i = 0; i < config.workers; i++) fork();
  log.info({ version: VERSION, workers: config.workers }, 'plantstore primary supervising workers');
  void stopSignal().then((signal) => {
    log.info({ signal }, 'stopping workers');
    void stopAll();
  });
  return stopped;
}
