import cluster, { type Worker } from 'node:cluster';
import { buildApp } from '../app.js';
import { describeConfig, loadServeConfig, SERVE_SETTINGS, type ServeConfig } from '../config.js';
import { createLogger } from '../logging.js';
import { openStore } from '../store/open-store.js';
import { type CommandContext, helpText, parseCommandLine } from './command-line.js';

export const serveHelp = helpText(
  'plantstore serve [options]',
  'Runs the HTTP server until SIGTERM or SIGINT, then finishes the requests in flight and exits 0.\n' +
    'With --workers N, N processes serve on the one port (node:cluster).',
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
  return config.workers > 1 && cluster.isPrimary ? superviseWorkers(config) : serve(config);
}

/** Resolves once SIGTERM or SIGINT arrives; later signals are absorbed, so a second Ctrl-C does not cut a graceful stop short. */
function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => resolve(signal));
  });
}

async function serve(config: ServeConfig): Promise<number> {
  const store = await openStore(config);
  const app = buildApp(config, store);
  const log = app.log;

  // With --workers N the first worker alone looks, so that the hint is logged once, not N times.
  if (cluster.worker === undefined || cluster.worker.id === 1) {
    const tokens = await store.listTokens();
    if (!tokens.some((token) => token.revokedAt === null)) {
      log.warn('no API token exists yet: create one with `bin/plantstore token create --name NAME`');
    }
  }

  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    log.fatal({ err: error }, 'cannot listen');
    await store.close();
    return 1;
  }
  log.info({ config: describeConfig(config) }, 'plantstore serving');

  const signal = await stopSignal();
  log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: finishing requests in flight');
  const grace = setTimeout(() => {
    log.warn('the grace period is over: closing the connections still open');
    app.server.closeAllConnections();
  }, config.shutdownGraceMs);
  // Closing stops accepting, waits for the requests in flight and commits every queued write.
  await app.close();
  clearTimeout(grace);
  await store.close();
  log.info({ config: describeConfig(config) }, 'stopped');
  // A worker's channel to its primary would keep the process alive.
  cluster.worker?.disconnect();
  return 0;
}

/**
 * The primary of `--workers N`: forks N serving processes that share the
 * port, replaces one that dies while serving, and on a signal stops them all
 * and exits with 0 when every one stopped cleanly.
 */
async function superviseWorkers(config: ServeConfig): Promise<number> {
  const log = createLogger(config.logLevel);
  let stopping = false;
  let failedAtStart = false;
  const fork = () => {
    const worker = cluster.fork();
    let listening = false;
    worker.once('listening', () => (listening = true));
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      if (!listening) {
        // A worker that cannot even start (bad database, port taken) would fail again: stop instead of looping.
        log.fatal({ pid: worker.process.pid, code }, 'a worker failed to start; stopping');
        failedAtStart = true;
        void stopAll();
        return;
      }
      log.error({ pid: worker.process.pid, code, signal }, 'a worker died; starting another');
      fork();
    });
  };

  let resolveStopped: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (resolveStopped = resolve));
  const stopAll = async () => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
    const codes = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<number | null>((resolve) => {
            if (worker.isDead()) return resolve(worker.process.exitCode);
            worker.once('exit', (code) => resolve(code));
            worker.process.kill('SIGTERM');
          }),
      ),
    );
    resolveStopped(failedAtStart || codes.some((code) => code !== 0) ? 1 : 0);
  };

  for (let i = 0; i < config.workers; i++) fork();
  log.info({ workers: config.workers }, 'plantstore primary supervising workers');
  void stopSignal().then((signal) => {
    log.info({ signal }, 'stopping workers');
    void stopAll();
  });
  return stopped;
}
