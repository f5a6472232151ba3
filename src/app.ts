import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { ServeConfig } from './config.js';
import { ServiceError } from './errors.js';
import { createLogger } from './logging.js';
import { AuthFailureLimiter } from './http/auth-failure-limiter.js';
import { clientErrorHandler } from './http/client-error-handler.js';
import { onRequestCompleted } from './http/request-completed.js';
import { requestId } from './http/request-id.js';
import { metricsRoutes } from './http/routes/metrics-routes.js';
import { Metrics } from './metrics.js';
import { SECURITY_HEADERS } from './http/security-headers.js';
import { errorHandler } from './http/error-handler.js';
import { parseExactJson } from './http/exact-json.js';
import { addInt64Keyword } from './http/int64-keyword.js';
import { plantsRoutes } from './http/routes/plants-routes.js';
import { GroupCommit } from './plants/group-commit.js';
import { systemRoutes } from './http/routes/system-routes.js';
import type { Store } from './store/store.js';
import { TokenVerifier } from './tokens/token-verifier.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's group commit, for metrics and tests. */
    groupCommit: GroupCommit;
  }
}

export type AppConfig = Pick<
  ServeConfig,
  | 'logLevel'
  | 'bodyLimit'
  | 'tokenCacheTtlMs'
  | 'writeBatchMax'
  | 'writeQueueMax'
  | 'headersTimeoutMs'
  | 'requestTimeoutMs'
  | 'maxConnections'
  | 'authFailureLimit'
  | 'authFailureWindowMs'
  | 'metricsToken'
>;

/**
 * Builds the HTTP application on a store. It never listens: the serve
 * command does, and tests inject requests or listen on a port of their own.
 * The store stays the caller's to close.
 */
export function buildApp(config: AppConfig, store: Store): FastifyInstance {
  const app = Fastify({
    loggerInstance: createLogger(config.logLevel) as FastifyBaseLogger,
    // The access log writes one line per request in place of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimit,
    ajv: {
      // Validate exactly what was sent: no coercion (`"1"` is not an id), no defaults, nothing removed.
      customOptions: { coerceTypes: false, useDefaults: false, removeAdditional: false },
      plugins: [addInt64Keyword],
    },
    clientErrorHandler,
    genReqId: requestId,
    return503OnClosing: true,
    // Slow clients (slowloris) get 408 instead of holding a connection forever; the timeouts are
    // checked every second rather than Node's default of every 30 s.
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    requestTimeout: config.requestTimeoutMs,
  });
  app.server.maxConnections = config.maxConnections;

  const metrics = new Metrics();
  app.decorateRequest('token', null);
  onRequestCompleted(app, metrics);
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
  app.addHook('onClose', () => writer.drain());

  systemRoutes(app, { store });
  metricsRoutes(app, { metrics, metricsToken: config.metricsToken });
  plantsRoutes(app, {
    writer,
    verifier: new TokenVerifier(store, { ttlMs: config.tokenCacheTtlMs }),
    limiter: new AuthFailureLimiter({ limit: config.authFailureLimit, windowMs: config.authFailureWindowMs }),
    metrics,
  });
  return app;
}
