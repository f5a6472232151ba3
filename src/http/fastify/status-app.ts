import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Registry } from 'prom-client';
import { ServiceError } from '../../errors.js';
import type { Store } from '../../store/store.js';
import type { RefusalDeps } from '../auth-refusal.js';
import { requestId } from '../request-id.js';
import { errorHandlers } from './error-handler.js';
import { metricsRoute } from './metrics-route.js';
import { healthRoutes } from './system-routes.js';

/** No route of a deliverer's port takes a body. */
const STATUS_BODY_LIMIT = 1024;

export interface StatusDeps extends RefusalDeps {
  store: Store;
  registry: Registry;
  metricsToken: string | undefined;
  logger: FastifyBaseLogger;
  stopping: () => boolean;
}

/** A deliverer's HTTP port: GET /healthz, /readyz and /metrics, answered as a server answers them; anything else 404. */
export function buildStatusApp(deps: StatusDeps): FastifyInstance {
  const { errorHandler, frameworkErrors } = errorHandlers(STATUS_BODY_LIMIT);
  // A probe's polls are not worth a log line each: an error still logs through the error handler.
  const app = Fastify({ loggerInstance: deps.logger, logController: new LogController({ disableRequestLogging: true }), genReqId: requestId, frameworkErrors });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(async (request) => {
    throw new ServiceError('NOT_FOUND', { detail: `${request.method} ${request.url.split('?')[0]}` });
  });
  healthRoutes(app, deps);
  metricsRoute(app, deps);
  return app;
}
