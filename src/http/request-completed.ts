import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { jsonLines } from '../logging.js';
import type { Metrics } from '../metrics.js';

/** pino's number for the info level, the access line's. */
const INFO = 30;

/**
 * What happens once a request is answered, in one hook: its access line (in
 * place of Fastify's two: method, path, status, duration, the client's
 * address (behind TRUST_PROXY, the one X-Forwarded-For gives), the request
 * id that every line of the request carries, and who it acted for: a store
 * token's name, or a JWT's subject and issuer, never the token), and its
 * place in the latency histogram.
 */
export function onRequestCompleted(app: FastifyInstance, metrics: Metrics): void {
  const logger = app.log as unknown as Logger;
  const lines = jsonLines(logger);
  app.addHook('onResponse', (request, reply, done) => {
    const seconds = reply.elapsedTime / 1000;
    if (logger.levelVal <= INFO) {
      if (lines === undefined) request.log.info(accessFields(request, reply, seconds), 'request');
      else lines.write(accessLine(lines.bindings, request, reply, seconds));
    }
    metrics.requests.series(request.routeOptions.url ?? 'unknown', request.method, reply.statusCode).observe(seconds);
    done();
  });
}

function accessFields(request: FastifyRequest, reply: FastifyReply, seconds: number) {
  return {
    method: request.method,
    path: request.url.split('?')[0],
    status: reply.statusCode,
    durationMs: Math.round(seconds * 1e6) / 1000,
    ip: request.ip,
    token: request.caller?.name,
    sub: request.caller?.subject,
    iss: request.caller?.issuer,
  };
}

/**
 * The access line as pino writes it from a request's logger, built here with
 * one template instead: the same fields in the same order (level, time, the
 * logger's bindings, reqId, then the fields, then msg), fields that are
 * undefined left out as JSON.stringify leaves them out. Going through pino
 * cost a child logger per request and a walk over the fields object; this
 * costs the JSON quoting of the few strings that may need it.
 */
export function accessLine(bindings: string, request: FastifyRequest, reply: FastifyReply, seconds: number): string {
  const caller = request.caller;
  const who =
    caller === null
      ? ''
      : caller.name !== undefined
        ? `,"token":${JSON.stringify(caller.name)}`
        : `${caller.subject === undefined ? '' : `,"sub":${JSON.stringify(caller.subject)}`},"iss":${JSON.stringify(caller.issuer)}`;
  const query = request.url.indexOf('?');
  const path = query === -1 ? request.url : request.url.slice(0, query);
  const ip = request.ip;
  return (
    `{"level":${INFO},"time":${Date.now()}${bindings},"reqId":${JSON.stringify(request.id)},"method":${JSON.stringify(request.method)},` +
    `"path":${JSON.stringify(path)},"status":${reply.statusCode},"durationMs":${Math.round(seconds * 1e6) / 1000}` +
    `${ip === undefined ? '' : `,"ip":${JSON.stringify(ip)}`}${who},"msg":"request"}\n`
  );
}
