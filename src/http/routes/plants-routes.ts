import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors.js';
import type { Metrics } from '../../metrics.js';
import { createPlant } from '../../plants/create-plant.js';
import type { NewPlant } from '../../plants/plant.js';
import type { GroupCommit } from '../../plants/group-commit.js';
import type { TokenVerifier } from '../../tokens/token-verifier.js';
import type { AuthFailureLimiter } from '../auth-failure-limiter.js';
import { bearerAuth } from '../bearer-auth.js';
import { componentSchema, exactInt64Schema } from '../contract.js';
import { requireJsonMediaType } from '../json-media-type.js';
import { allowOnly } from '../method-not-allowed.js';

/** POST /plants: authentication, then media type, then the body, then the domain. */
export function plantsRoutes(app: FastifyInstance, deps: { writer: GroupCommit; verifier: TokenVerifier; limiter: AuthFailureLimiter; metrics: Metrics }): void {
  const errorSchema = componentSchema('Error');
  app.post('/plants', {
    schema: {
      body: exactInt64Schema(componentSchema('NewPlant')),
      response: { 200: componentSchema('Plant'), '4xx': errorSchema, '5xx': errorSchema },
    },
    onRequest: [bearerAuth(deps.verifier, deps.limiter, deps.metrics), requireJsonMediaType],
    // Not async: the answer is sent from the group commit's callback, with no promise per request.
    handler: (request, reply) => {
      createPlant(deps.writer, request.body as NewPlant, (error, created) => {
        if (error === undefined) {
          deps.metrics.countCreate(created!.outcome);
          void reply.send(created!.plant);
          return;
        }
        if (error instanceof ServiceError && error.code === 'PLANT_CONFLICT') deps.metrics.countCreate('conflict');
        void reply.send(error);
      });
    },
  });
  allowOnly(app, '/plants', ['POST']);
}
