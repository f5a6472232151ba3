import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics.js';

/**
 * What happens once a request is answered, in one hook: its access line (in
 * place of Fastify's two: method, path, status, duration, the request id that
 * every line of the request carries, and the name of the token, never the
 * token), and its place in the latency histogram.
 */
export function onRequestCompleted(app: FastifyInstance, metrics: Metrics): void {
  // prom-client hashes the labels on every observation; the few series there are are looked up once.
  const series = new Map<string, { observe(seconds: number): void }>();
  const histogramOf = (route: string, method: string, status: number) => {
    const key = `${method} ${route} ${status}`;
    let found = series.get(key);
    if (found === undefined) {
      found = metrics.requests.labels({ route, method, status });
      series.set(key, found);
    }
    return found;
  };

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
    histogramOf(route, request.method, reply.statusCode).observe(seconds);
    done();
  });
}
