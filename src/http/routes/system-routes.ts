import type { FastifyInstance } from 'fastify';
import { componentSchema, openApiDocument } from '../contract.js';
import { allowOnly } from '../method-not-allowed.js';

/** The routes that need no token: liveness and the contract itself. */
export function systemRoutes(app: FastifyInstance): void {
  const documentJson = JSON.stringify(openApiDocument);

  app.get('/healthz', { schema: { response: { 200: componentSchema('Health') } } }, async () => ({ status: 'ok' }));
  allowOnly(app, '/healthz', ['GET']);

  app.get('/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(documentJson));
  allowOnly(app, '/openapi.json', ['GET']);
}
