import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors.js';
import type { Metrics } from '../../observability/metrics.js';
import { createPlant } from '../../plants/create-plant.js';
import type { NewPlant, Plant } from '../../plants/plant.js';
import type { GroupCommit } from '../../plants/group-commit.js';
import type { TokenVerifier } from '../../tokens/token-verifier.js';
import type { AuthFailureLimiter } from '../auth-failure-limiter.js';
import { bearerAuth } from '../bearer-token.js';
import { componentSchema } from '../../contract/openapi-document.js';
import { requireJsonMediaType } from '../json-media-type.js';
import { allowOnly } from './method-not-allowed.js';
import { newPlantSchema, serializeError, serializePlant, validateNewPlant } from '../../contract/plant-codecs.js';

/**
 * POST /plants in Fastify: authentication, then media type, then the body,
 * then the domain. The creates whose headers already settle all of that (a
 * remembered valid token, a JSON body of a stated length) are served before
 * they reach Fastify, by direct-create-route.ts, with the same checks and
 * writers; this route serves every other.
 */
export function plantsRoutes(app: FastifyInstance, deps: { writer: GroupCommit; verifier: TokenVerifier; limiter: AuthFailureLimiter; metrics: Metrics }): void {
  const errorSchema = componentSchema('Error');
  app.post('/plants', {
    schema: {
      body: newPlantSchema,
      response: { 200: componentSchema('Plant'), '4xx': errorSchema, '5xx': errorSchema },
    },
    validatorCompiler: () => validateNewPlant,
    serializerCompiler: ({ httpStatus }) => (httpStatus === '200' ? serializePlant : serializeError) as (data: unknown) => string,
    onRequest: [bearerAuth(deps.verifier, deps.limiter, deps.metrics), requireJsonMediaType],
    // Not async: the answer is sent from the group commit's callback, with no promise per request.
    handler: (request, reply) => {
      createCounted(deps.writer, deps.metrics, request.body as NewPlant, (error, plant) => void reply.send(error ?? plant));
    },
  });
  allowOnly(app, '/plants', ['POST']);
}

/**
 * Creates the plant (see createPlant) and counts its outcome towards the
 * creates metric; `done` gets the plant to answer with, or the error. Throws,
 * before anything is queued, for a plant no store can keep.
 */
export function createCounted(writer: GroupCommit, metrics: Metrics, plant: NewPlant, done: (error: unknown, plant?: Plant) => void): void {
  createPlant(writer, plant, (error, created) => {
    if (error === undefined) {
      metrics.countCreate(created!.outcome);
      done(undefined, created!.plant);
      return;
    }
    if (error instanceof ServiceError && error.code === 'PLANT_CONFLICT') metrics.countCreate('conflict');
    done(error);
  });
}
