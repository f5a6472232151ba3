import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { jsonLines } from '../logging.js';
import type { Metrics } from '../metrics.js';
import type { Caller } from '../tokens/token-verifier.js';

/** pino's number for the info level, the access line's. */
const INFO = 30;

/**
 * What the access line needs of an answered request, whichever way it was
 * served: a Fastify request has these fields, and so has a create served on
 * node:http directly (see direct-create-route.ts).
 */
export interface CompletedRequest {
  readonly id: string;
  readonly method: string;
  readonly url: string;
  /** The client's address: the peer, or behind TRUST_PROXY the one X-Forwarded-For gives. */
  readonly ip: string | undefined;
  readonly caller: Caller | null;
  /** The request's own logger, for the access line when lines are not JSON on stdout (a terminal's pretty lines). */
  readonly log: { info(fields: object, message: string): void };
}

/** Records one answered request: its access line, and its place in the latency histogram under `route`. */
export type RecordCompletion = (request: CompletedRequest, route: string, status: number, seconds: number) => void;

/**
 * What happens once a request is answered: its access line (in place of
 * Fastify's two: method, path, status, duration, the client's address, the
 * request id that every line of the request carries, and who it acted for: a
 * store token's name, or a JWT's subject and issuer, never the token), and
 * its place in the latency histogram.
 */
export function recordCompletion(logger: Logger, metrics: Metrics): RecordCompletion {
  const lines = jsonLines(logger);
  return (request, route, status, seconds) => {
    if (logger.levelVal <= INFO) {
      if (lines === undefined) request.log.info(accessFields(request, status, seconds), 'request');
      else lines.write(accessLine(lines.bindings, request, status, seconds));
    }
    metrics.requests.series(route, request.method, status).observe(seconds);
  };
}

/** Records every request Fastify answers, in one onResponse hook. */
export function onRequestCompleted(app: FastifyInstance, record: RecordCompletion): void {
  app.addHook('onResponse', (request, reply, done) => {
    record(request, request.routeOptions.url ?? 'unknown', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

function accessFields(request: CompletedRequest, status: number, seconds: number) {
  return {
    method: request.method,
    path: request.url.split('?')[0],
    status,
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
export function accessLine(bindings: string, request: CompletedRequest, status: number, seconds: number): string {
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
    `"path":${JSON.stringify(path)},"status":${status},"durationMs":${Math.round(seconds * 1e6) / 1000}` +
    `${ip === undefined ? '' : `,"ip":${JSON.stringify(ip)}`}${who},"msg":"request"}\n`
  );
}
