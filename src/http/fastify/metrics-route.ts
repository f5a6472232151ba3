import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors.js';
import type { Metrics } from '../../observability/metrics.js';
import { hashToken } from '../../tokens/api-token.js';
import type { AuthFailureLimiter } from '../auth-failure-limiter.js';
import { refusedAuthentication } from '../auth-refusal.js';
import { bearerToken } from '../bearer-token.js';
import { allowOnly } from './method-not-allowed.js';

/** Digests are compared rather than tokens: both are 64 hex digits, so the comparison's time tells nothing, not even the token's length. */
const digest = (text: string) => Buffer.from(hashToken(text));

/**
 * GET /metrics in the Prometheus text format; guarded by a bearer token when
 * METRICS_TOKEN is set. The header is read as POST /plants reads it, and a
 * wrong or missing token counts towards the same limit of failed
 * authentications (`authFailures`, keyed by `request.ip`, which TRUST_PROXY sets).
 */
export function metricsRoute(app: FastifyInstance, deps: { metrics: Metrics; metricsToken: string | undefined; authFailures: AuthFailureLimiter }): void {
  const expected = deps.metricsToken === undefined ? undefined : digest(deps.metricsToken);
  app.get('/metrics', async (request, reply) => {
    if (expected !== undefined) {
      const token = bearerToken(request.headers.authorization);
      if (token === undefined) throw refusedAuthentication(deps, request.ip, request.log, new ServiceError('MISSING_CREDENTIALS'), 'missing');
      if (!timingSafeEqual(digest(token), expected)) throw refusedAuthentication(deps, request.ip, request.log, new ServiceError('INVALID_TOKEN'), 'unknown');
    }
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  allowOnly(app, '/metrics', ['GET']);
}
