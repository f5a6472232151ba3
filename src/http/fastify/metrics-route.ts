import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors.js';
import type { Metrics } from '../../observability/metrics.js';
import { allowOnly } from './method-not-allowed.js';

/** GET /metrics in the Prometheus text format; guarded by a bearer token when METRICS_TOKEN is set. */
export function metricsRoute(app: FastifyInstance, deps: { metrics: Metrics; metricsToken: string | undefined }): void {
  const expected = deps.metricsToken === undefined ? undefined : Buffer.from(`Bearer ${deps.metricsToken}`);
  app.get('/metrics', async (request, reply) => {
    if (expected !== undefined) {
      const presented = request.headers.authorization;
      if (presented === undefined) throw new ServiceError('MISSING_CREDENTIALS');
      const given = Buffer.from(presented);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new ServiceError('INVALID_TOKEN');
    }
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  allowOnly(app, '/metrics', ['GET']);
}
