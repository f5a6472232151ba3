import type { FastifyInstance } from 'fastify';
import { componentSchema, openApiJson } from '../../contract/openapi-document.js';
import { ServiceError } from '../../errors.js';
import type { Store } from '../../store/store.js';
import { allowOnly } from './method-not-allowed.js';

const READY_TIMEOUT_MS = 1000;

/** The routes that need no token. */
export function systemRoutes(app: FastifyInstance, deps: { store: Store; stopping: () => boolean }): void {
  healthRoutes(app, deps);
  app.get('/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(openApiJson));
  allowOnly(app, '/openapi.json', ['GET']);
}

/** GET /healthz and /readyz, as a server and a deliverer answer them. */
export function healthRoutes(app: FastifyInstance, deps: { store: Store; stopping: () => boolean }): void {
  const health = { schema: { response: { 200: componentSchema('Health'), '5xx': componentSchema('Error') } } };

  // Liveness ignores the store, so an orchestrator does not restart a healthy process because the database is away.
  app.get('/healthz', health, async () => ({ status: 'ok' }));
  allowOnly(app, '/healthz', ['GET']);

  // Readiness: a load balancer sends traffic only while the store answers a real query in time; a deliverer delivers only then.
  app.get('/readyz', health, async () => {
    if (deps.stopping()) throw new ServiceError('STOPPING');
    await withTimeout(deps.store.ping(), READY_TIMEOUT_MS);
    return { status: 'ok' };
  });
  allowOnly(app, '/readyz', ['GET']);
}

async function withTimeout(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ServiceError('STORE_UNAVAILABLE', { detail: `the store did not answer within ${ms} ms` })), ms);
  });
  try {
    await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
