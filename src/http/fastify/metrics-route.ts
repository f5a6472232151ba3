import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors.js';
import { hashToken } from '../../tokens/api-token.js';
import type { Registry } from 'prom-client';
import { type RefusalDeps, refusedAuthentication } from '../auth-refusal.js';
import { bearerToken } from '../bearer-token.js';
import { allowOnly } from './method-not-allowed.js';

/** Digests, not tokens, are compared: of equal length, their comparison's time tells nothing, not even the token's length. */
const digest = (text: string) => Buffer.from(hashToken(text));

/** A wrong METRICS_TOKEN counts towards the same failed-authentication limit as POST /plants. */
export function metricsRoute(app: FastifyInstance, deps: RefusalDeps & { registry: Registry; metricsToken: string | undefined }): void {
  const expected = deps.metricsToken === undefined ? undefined : digest(deps.metricsToken);
  app.get('/metrics', async (request, reply) => {
    if (expected !== undefined) {
      const token = bearerToken(request.headers.authorization);
      if (token === undefined) throw refusedAuthentication(deps, request.ip, request.log, new ServiceError('MISSING_CREDENTIALS'), 'missing');
      if (!timingSafeEqual(digest(token), expected)) throw refusedAuthentication(deps, request.ip, request.log, new ServiceError('INVALID_TOKEN'), 'unknown');
    }
    return reply.type(deps.registry.contentType).send(await deps.registry.metrics());
  });
  allowOnly(app, '/metrics', ['GET']);
}
