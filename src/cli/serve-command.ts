import { buildApp } from '../app.js';
import { loadServeConfig, type ServeConfig } from '../config.js';
import { openStore } from '../store/open-store.js';
import { type CommandContext, helpText, parseCommandLine } from './command-line.js';

const SETTINGS = ['host', 'port', 'database', 'logLevel', 'bodyLimit', 'tokenCacheTtlMs'] as const;

export const serveHelp = helpText(
  'plantstore serve [options]',
  'Runs the HTTP server until SIGTERM or SIGINT, then finishes the requests in flight and exits 0.',
  SETTINGS,
);

/** Resolves when the server has stopped after a signal; rejects when it cannot start. */
export async function serveCommand(argv: readonly string[], context: CommandContext): Promise<number> {
  const { values } = parseCommandLine(argv, { options: {}, settingNames: SETTINGS });
  if (values.help) {
    context.stdout.write(serveHelp);
    return 0;
  }
  const config = loadServeConfig({ env: context.env, flags: values as Record<string, string | undefined> });
  return serve(config);
}

async function serve(config: ServeConfig): Promise<number> {
  const store = await openStore(config.database);
  const app = buildApp(config, store);
  const log = app.log;

  const tokens = await store.listTokens();
  if (!tokens.some((token) => token.revokedAt === null)) {
    log.warn('no API token exists yet: create one with `bin/plantstore token create --name NAME`');
  }

  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    log.fatal({ err: error }, 'cannot listen');
    await store.close();
    return 1;
  }
  log.info({ database: config.database.url, bodyLimit: config.bodyLimit, logLevel: config.logLevel }, 'plantstore serving');

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info({ signal }, 'shutting down: finishing requests in flight');
  await app.close();
  await store.close();
  log.info('stopped');
  return 0;
}
