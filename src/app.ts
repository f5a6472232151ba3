import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { ServeConfig } from './config.js';
import { ServiceError } from './errors.js';
import { createLogger } from './observability/logger.js';
import { AuthFailureLimiter } from './http/auth-failure-limiter.js';
import { clientErrorHandler } from './http/node/client-error-handler.js';
import { recordCompletion, onRequestCompleted } from './observability/request-completed.js';
import { requestId } from './http/request-id.js';
import { requestLogger } from './observability/request-logger.js';
import { metricsRoutes } from './http/fastify/metrics-route.js';
import { Metrics } from './observability/metrics.js';
import { SECURITY_HEADERS } from './http/answer-headers.js';
import { errorHandler } from './http/error-answer.js';
import { parseExactJson } from './contract/exact-json.js';
import { clientAddress } from './http/client-address.js';
import { httpServer } from './http/node/http-server.js';
import { type DirectRoute, directCreateRoute } from './http/node/direct-create.js';
import { plantsRoutes } from './http/fastify/plants-route.js';
import { GroupCommit } from './plants/group-commit.js';
import { systemRoutes } from './http/fastify/system-routes.js';
import { docsRoutes } from './http/fastify/docs-routes.js';
import type { Store } from './store/store.js';
import { createTokenVerifier, type TokenSettings } from './tokens/create-token-verifier.js';
import type { TokenVerifier } from './tokens/token-verifier.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's group commit, for metrics and tests. */
    groupCommit: GroupCommit;
    /** Set when the process begins to stop: readiness fails from then on, so load balancers send elsewhere. */
    stopping: boolean;
    /** The app's bearer token verifier; `serve` starts it before listening. */
    tokenVerifier: TokenVerifier;
    /** The registry GET /metrics answers from, for what runs beside the app (the webhook dispatcher). */
    metricsRegistry: Registry;
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
    | 'authFailureLimit'
    | 'authFailureWindowMs'
    | 'metricsToken'
    | 'trustProxy'
    | 'docs'
  >;

/** How often node:http looks for requests past their timeouts: a 408 comes up to this long after its deadline. */
export const CONNECTIONS_CHECK_INTERVAL_MS = 1000;

/**
 * Builds the HTTP application on a store. It never listens: the serve
 * command does, and tests inject requests or listen on a port of their own.
 * The store stays the caller's to close. `clock.now` (Date.now by default)
 * is what token expiry and the token cache are judged by: tests move it.
 */
export function buildApp(config: AppConfig, store: Store, clock: { now?: () => number } = {}): FastifyInstance {
  const app = Fastify({
    loggerInstance: createLogger(config.logLevel) as FastifyBaseLogger,
    // The access log writes one line per request in place of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's own logger is made only when the request logs more than its access line.
    childLoggerFactory: requestLogger,
    bodyLimit: config.bodyLimit,
    // The server tries the direct routes before Fastify's own (see direct-create-route.ts).
    serverFactory: (fastifyHandler, options) => httpServer(options, (request, response) => direct(request, response) || fastifyHandler(request, response)),
    clientErrorHandler,
    genReqId: requestId,
    // The client's address for the failed-authentication limit and the access line: the peer, or
    // with TRUST_PROXY the nearest address in X-Forwarded-For that no trusted proxy added.
    trustProxy: config.trustProxy === undefined ? false : [...config.trustProxy],
    // A request that reaches a stopping server on a connection it already had is served (and
    // answered with Connection: close), not refused with Fastify's own 503 body, which is not the
    // contract's Error: the store stays open until every such request is answered.
    return503OnClosing: false,
    // Slow clients (slowloris) get 408 instead of holding a connection forever; the timeouts are
    // checked every second rather than Node's default of every 30 s.
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS,
    },
    requestTimeout: config.requestTimeoutMs,
  });
  app.server.maxConnections = config.maxConnections;
  // Until the routes exist, every request is Fastify's.
  let direct: DirectRoute = () => false;

  const metrics = new Metrics();
  app.decorate('metricsRegistry', metrics.registry);
  app.decorateRequest('caller', null);
  const record = recordCompletion(app.log as unknown as Logger, metrics);
  onRequestCompleted(app, record);
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    reply.header('x-request-id', request.id);
    done();
  });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(async (request) => {
    throw new ServiceError('NOT_FOUND', { detail: `${request.method} ${request.url.split('?')[0]}` });
  });

  // Only JSON is accepted, parsed so that int64 ids keep every digit.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseExactJson(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  const writer = new GroupCommit(store, {
    maxBatch: config.writeBatchMax,
    maxQueue: config.writeQueueMax,
    concurrency: store.writeConcurrency,
    onCommit: (batchSize, seconds) => {
      metrics.commitBatchSize.observe(batchSize);
      metrics.commitDuration.observe(seconds);
    },
  });
  app.decorate('groupCommit', writer);
  app.decorate('stopping', false);
  app.addHook('onClose', () => writer.drain());

  const verifier = createTokenVerifier(config, store, app.log, clock);
  app.decorate('tokenVerifier', verifier);

  systemRoutes(app, { store, stopping: () => app.stopping });
  metricsRoutes(app, { metrics, metricsToken: config.metricsToken });
  if (config.docs) docsRoutes(app);
  plantsRoutes(app, {
    writer,
    verifier,
    limiter: new AuthFailureLimiter({ limit: config.authFailureLimit, windowMs: config.authFailureWindowMs }),
    metrics,
  });
  direct = directCreateRoute({
    writer,
    verifier,
    metrics,
    record,
    logger: app.log,
    clientAddress: clientAddress(config.trustProxy),
    bodyLimit: config.bodyLimit,
  });
  return app;
}
