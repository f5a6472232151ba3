import type { Registry } from 'prom-client';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { ServeConfig } from './config/config.js';
import { ServiceError } from './errors.js';
import { AuthFailureLimiter } from './http/auth-failure-limiter.js';
import { clientAddress, trustedPeer } from './http/client-address.js';
import { CreatePipeline } from './http/create-pipeline.js';
import { docsRoutes } from './http/fastify/docs-routes.js';
import { errorHandlers } from './http/fastify/error-handler.js';
import { addGlobalHooks } from './http/fastify/global-hooks.js';
import { metricsRoute } from './http/fastify/metrics-route.js';
import { plantsRoute } from './http/fastify/plants-route.js';
import { systemRoutes } from './http/fastify/system-routes.js';
import { clientErrorHandler } from './http/server/client-error-handler.js';
import { ConnectionsPerAddress } from './http/server/connections-per-address.js';
import { plantsFastPath } from './http/fast-path/plants-fast-path.js';
import { httpServer } from './http/server/http-server.js';
import { requestId } from './http/request-id.js';
import { LogThrottle } from './observability/log-throttle.js';
import { createLogger } from './observability/logger.js';
import { Metrics } from './observability/metrics.js';
import { recordCompletion } from './observability/request-completed.js';
import { requestLogger } from './observability/request-logger.js';
import { GroupCommit } from './plants/group-commit.js';
import { RateLimiter } from './rate-limits/rate-limiter.js';
import type { Store } from './store/store.js';
import { createTokenVerifier, type TokenSettings } from './tokens/create-token-verifier.js';
import { TokenUses } from './tokens/token-uses.js';
import { TokenUseWriter } from './tokens/token-use-writer.js';
import type { TokenVerifier } from './tokens/token-verifier.js';
import type { StartTracing } from './tracing/load-tracing.js';
import type { Tracing } from './tracing/tracing.js';

declare module 'fastify' {
  interface FastifyInstance {
    groupCommit: GroupCommit;
    /** Set when the process begins to stop: readiness fails from then on, so load balancers send elsewhere. */
    stopping: boolean;
    /** The app's bearer token verifier; `serve` starts it before listening. */
    tokenVerifier: TokenVerifier;
    /** The registry GET /metrics answers from, for what runs beside the app (the webhook dispatcher). */
    metricsRegistry: Registry;
    /** The process's tracer when traces are on, for what runs beside the app; `serve` shuts it down last. */
    tracing: Tracing | undefined;
  }
}

export type AppConfig = TokenSettings &
  Pick<
    ServeConfig,
    | 'logLevel'
    | 'bodyLimit'
    | 'writeBatchMax'
    | 'writeQueueMax'
    | 'headersTimeoutMs'
    | 'requestTimeoutMs'
    | 'maxConnections'
    | 'maxConnectionsPerAddress'
    | 'keepAliveTimeoutMs'
    | 'authFailureLimit'
    | 'authFailureWindowMs'
    | 'rateLimit'
    | 'metricsToken'
    | 'trustProxy'
    | 'docs'
  >;

/** How often node:http looks for requests past their timeouts: a 408 comes up to this long after its deadline. */
export const CONNECTIONS_CHECK_INTERVAL_MS = 1000;

/** At most one warning line per this long for a recurring event: connections refused for their address, rate-limit slices not given back. */
export const RECURRING_WARNING_INTERVAL_MS = 10_000;

export interface AppOptions {
  /** What token expiry and the token cache are judged by (Date.now by default): tests move it. */
  now?: () => number;
  /** Starts tracing (see loadTracing); without it no span is made. */
  tracing?: StartTracing | undefined;
}

/** Builds the HTTP application on a store; it never listens (serve and tests do), and the store stays the caller's to close. */
export function buildApp(config: AppConfig, store: Store, options: AppOptions = {}): FastifyInstance {
  // What the routes need is made first, so that both adapters get it whole.
  const logger = createLogger(config.logLevel);
  const metrics = new Metrics();
  const tracing = options.tracing?.(metrics.spans);
  const requestSpans = tracing?.requests;
  const groupCommit = new GroupCommit(store, {
    maxBatch: config.writeBatchMax,
    maxQueue: config.writeQueueMax,
    concurrency: store.writeConcurrency,
    onCommit: (batchSize, seconds) => {
      metrics.commitBatchSize.observe(batchSize);
      metrics.commitDuration.observe(seconds);
    },
    ...(tracing && { tracer: tracing.commits(store.databaseSystem) }),
  });
  const tokenUses = new TokenUses();
  const verifier = createTokenVerifier(config, store, logger, options, {
    uses: tokenUses,
    onLookup: (outcome) => metrics.tokenLookups.inc({ outcome }),
  });
  const tokenUseWriter = new TokenUseWriter(store, tokenUses, logger);
  const authFailures = new AuthFailureLimiter({ limit: config.authFailureLimit, windowMs: config.authFailureWindowMs });
  const rateLimiter = rateLimiterOf(store, logger);
  const pipeline = new CreatePipeline({ groupCommit, verifier, authFailures, metrics, rateLimiter, defaultRateLimit: config.rateLimit });
  const record = recordCompletion(logger, metrics);
  const direct = plantsFastPath({
    pipeline,
    record,
    logger,
    clientAddress: clientAddress(config.trustProxy),
    bodyLimit: config.bodyLimit,
    spans: requestSpans,
  });
  const { errorHandler, frameworkErrors } = errorHandlers(config.bodyLimit);
  const perAddress = connectionsPerAddress(config, logger, metrics);

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // The access log writes one line per request in place of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's own logger is made only when the request logs more than its access line.
    childLoggerFactory: requestLogger,
    bodyLimit: config.bodyLimit,
    // The node:http adapter takes the creates it can serve before Fastify sees them.
    serverFactory: (fastifyHandler, options) =>
      httpServer(options, (request, response) => direct(request, response) || fastifyHandler(request, response), perAddress && ((socket) => perAddress.admit(socket))),
    clientErrorHandler,
    // A path Fastify cannot decode is refused before routing, with the contract's Error, not Fastify's own body.
    frameworkErrors,
    genReqId: requestId,
    // The client is the peer, or with TRUST_PROXY the nearest X-Forwarded-For address no trusted proxy added.
    trustProxy: config.trustProxy === undefined ? false : [...config.trustProxy],
    // A request on a connection a stopping server already had is served (with Connection: close), not given
    // Fastify's own 503 body, which is not the contract's Error; the store stays open until it is answered.
    return503OnClosing: false,
    // Slow clients (slowloris) get a 408 rather than holding a connection; Node's default checks only every 30 s.
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS,
    },
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
  });
  app.server.maxConnections = config.maxConnections;
  // node:http closes those past MAX_CONNECTIONS before any code of ours sees them, and says so here.
  app.server.on('drop', () => metrics.connectionsRefused.inc({ limit: 'max_connections' }));
  app.decorate('metricsRegistry', metrics.registry);
  app.decorate('groupCommit', groupCommit);
  app.decorate('stopping', false);
  app.decorate('tokenVerifier', verifier);
  app.decorateRequest('caller', null);
  app.decorateRequest('rateLimited', undefined);
  app.decorate('tracing', tracing);
  app.decorateRequest('span', undefined);
  app.decorateRequest('errorBody', undefined);
  app.addHook('onClose', () => groupCommit.drain());
  // The tokens' last uses are written every few seconds while the app runs, and once more as it closes.
  app.addHook('onReady', async () => tokenUseWriter.start());
  app.addHook('onClose', () => tokenUseWriter.stop());
  // Slices of quota in hand are given back after their hold, and all of them as the app closes.
  app.addHook('onReady', async () => rateLimiter.start());
  app.addHook('onClose', () => rateLimiter.stop());
  addGlobalHooks(app, record);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(async (request) => {
    throw new ServiceError('NOT_FOUND', { detail: `${request.method} ${request.url.split('?')[0]}` });
  });
  // Only JSON is accepted, and kept as text: the create pipeline parses it so that int64 ids keep every digit.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  systemRoutes(app, { store, stopping: () => app.stopping });
  metricsRoute(app, { metrics, registry: metrics.registry, metricsToken: config.metricsToken, authFailures });
  if (config.docs) docsRoutes(app);
  plantsRoute(app, pipeline, requestSpans);
  return app;
}

/** The rate limits' share of the store; what it cannot give back or prune is logged, at most a line per interval. */
function rateLimiterOf(store: Store, logger: { warn(fields: object, message: string): void }): RateLimiter {
  const lines = new LogThrottle(RECURRING_WARNING_INTERVAL_MS);
  return new RateLimiter(store.rateLimits, {
    onError: (error) => {
      const unlogged = lines.take();
      if (unlogged !== undefined) logger.warn({ err: error, unlogged }, 'rate limit slices could not be given back to the store; their creates refill in time');
    },
  });
}

/** MAX_CONNECTIONS_PER_ADDRESS, counting and logging what it refuses; undefined when it is 0. */
function connectionsPerAddress(config: AppConfig, logger: { warn(fields: object, message: string): void }, metrics: Metrics): ConnectionsPerAddress | undefined {
  if (config.maxConnectionsPerAddress === 0) return undefined;
  const lines = new LogThrottle(RECURRING_WARNING_INTERVAL_MS);
  return new ConnectionsPerAddress({
    limit: config.maxConnectionsPerAddress,
    exempt: trustedPeer(config.trustProxy),
    onRefuse: (address, key) => {
      metrics.connectionsRefused.inc({ limit: 'per_address' });
      const unlogged = lines.take();
      if (unlogged === undefined) return;
      logger.warn({ ip: address, key, limit: config.maxConnectionsPerAddress, unlogged }, 'connection refused: its address holds MAX_CONNECTIONS_PER_ADDRESS');
    },
  });
}
