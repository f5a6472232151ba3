import type { Logger } from 'pino';
import { jsonLines } from './logger.js';
import type { Metrics } from './metrics.js';
import type { Caller } from '../tokens/token-verifier.js';
import { accessFields, AccessLines } from './access-line.js';
import { INFO } from './pino-internals.js';

/**
 * What the access line needs of an answered request, whichever way it was
 * served: a Fastify request has these fields, and so has a create served on
 * node:http directly (http/node/direct-create.ts).
 */
export interface CompletedRequest {
  /** The request id (request-id.ts): a well-formed one holds nothing that JSON would escape. */
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
  const json = jsonLines(logger);
  const accessLines = json === undefined ? undefined : new AccessLines(json.bindings);
  return (request, route, status, seconds) => {
    if (logger.levelVal <= INFO) {
      // A terminal's pretty lines go through pino; JSON lines are written by AccessLines.
      if (json === undefined) request.log.info(accessFields(request, status, seconds), 'request');
      else accessLines!.write(json.lines, request, status, seconds);
    }
    metrics.requests.series(route, request.method, status).observe(seconds);
  };
}
