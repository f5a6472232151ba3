import type { FastifyInstance } from 'fastify';

/**
 * One access line per request, once it is answered, in place of Fastify's
 * two (incoming, completed): method, path, status, duration, request id (on
 * every line), and the name of the token that authenticated it, never the token.
 */
export function accessLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      {
        method: request.method,
        path: request.routeOptions.url ?? request.url.split('?')[0],
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
        token: request.token?.name,
      },
      'request',
    );
    done();
  });
}
