import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics.js';

/**
 * What happens once a request is answered, in one hook: its access line (in
 * place of Fastify's two: method, path, status, duration, the request id that
 * every line of the request carries, and the name of the token, never the
 * token), and its place in the latency histogram.
 */
export function onRequestCompleted(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unknown';
    const seconds = reply.elapsedTime / 1000;
    request.log.info(
      {
        method: request.method,
        path: request.url.split('?')[0],
        status: reply.statusCode,
        durationMs: Math.round(seconds * 1e6) / 1000,
        token: request.token?.name,
      },
      'request',
    );
    metrics.requests.observe({ route, method: request.method, status: reply.statusCode }, seconds);
    done();
  });
}
