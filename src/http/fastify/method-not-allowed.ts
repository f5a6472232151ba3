import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors.js';

const METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'] as const;

/** 405 with the `Allow` header RFC 9110 (section 15.5.6) requires; GET implies HEAD, as Fastify serves both. */
export function allowOnly(app: FastifyInstance, url: string, allowed: readonly (typeof METHODS)[number][]): void {
  const allow = allowed.includes('GET') ? [...allowed, 'HEAD'] : [...allowed];
  const header = allow.join(', ');
  const refusal = (method: string) =>
    new ServiceError('METHOD_NOT_ALLOWED', { detail: `${method} ${url}; this path accepts ${header}`, headers: { allow: header } });
  app.route({
    method: METHODS.filter((method) => !allow.includes(method)),
    url,
    // Refused before the body is read, so that a body of any type still gets 405, not 415 or 400.
    onRequest: (request, _reply, done) => done(refusal(request.method)),
    handler: async (request) => {
      throw refusal(request.method);
    },
  });
}
