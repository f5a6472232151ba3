import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Metrics } from '../../observability/metrics.js';
import type { NewPlant, Plant } from '../../plants/plant.js';
import type { GroupCommit } from '../../plants/group-commit.js';
import type { Caller, TokenVerifier } from '../../tokens/token-verifier.js';
import { bearerToken } from '../bearer-token.js';
import { invalidPlant, logErrorAnswer, toServiceError } from '../error-answer.js';
import { parseExactJson } from '../../contract/exact-json.js';
import { mediaTypeProblem } from '../json-media-type.js';
import { serializeError, serializePlant, validateNewPlant } from '../../contract/plant-codecs.js';
import { requestId } from '../request-id.js';
import type { CompletedRequest, RecordCompletion } from '../../observability/request-completed.js';
import { SECURITY_HEADERS } from '../answer-headers.js';
import { createCounted } from '../fastify/plants-route.js';

/** Takes a request and answers it, or returns false and leaves it untouched for Fastify. */
export type DirectRoute = (request: IncomingMessage, response: ServerResponse) => boolean;

export interface DirectCreateDeps {
  writer: GroupCommit;
  verifier: TokenVerifier;
  metrics: Metrics;
  record: RecordCompletion;
  /** The app's logger; a request's own is made from it only when the request logs an error. */
  logger: FastifyBaseLogger;
  clientAddress: (request: IncomingMessage) => string | undefined;
  bodyLimit: number;
}

/** The route's name in the latency histogram, as Fastify names it. */
const ROUTE = '/plants';

/** The security headers of every answer, as name, value, name, value: node:http's fastest form. */
const SECURITY = Object.entries(SECURITY_HEADERS).flat();
const JSON_TYPE = 'application/json; charset=utf-8';
/** An answer's headers in the order Fastify writes them (security headers, request id, the body's), with two places to fill. */
const ANSWER_HEADERS: (string | number)[] = [...SECURITY, 'x-request-id', '', 'content-type', JSON_TYPE, 'content-length', 0];
const ID_AT = SECURITY.length + 1;
const LENGTH_AT = ANSWER_HEADERS.length - 1;

/**
 * POST /plants served on node:http, before Fastify sees the request: the
 * one route that carries the load, and whose every step Fastify added its
 * own per-request machinery to (a request and a reply object, hook runners,
 * the body's stream handling, listeners added and removed), which measured
 * more than the rest of the service's own work together (docs/performance.md).
 *
 * It takes only the creates whose headers leave nothing to decide but the
 * body: `POST /plants` exactly, a remembered valid token, a JSON media type,
 * a Content-Length within BODY_LIMIT. Everything else (no or unknown token,
 * a refusal, a token not yet checked, another media type, a chunked or
 * empty or too large body, a query string) goes to Fastify's route, which
 * answers as it always did. From the body on, both ways use the same code:
 * the exact parse, the validator and the serialisers compiled once from the
 * contract (plant-codecs.ts), the catalogue's errors, the group commit, the
 * access line and the histogram.
 */
export function directCreateRoute(deps: DirectCreateDeps): DirectRoute {
  return (request, response) => {
    if (request.url !== ROUTE || request.method !== 'POST') return false;
    const headers = request.headers;
    const length = Number(headers['content-length']);
    if (!(length > 0 && length <= deps.bodyLimit) || headers['transfer-encoding'] !== undefined) return false;
    if (mediaTypeProblem(headers['content-type']) !== undefined) return false;
    const token = bearerToken(headers.authorization);
    if (token === undefined) return false;
    const verdict = deps.verifier.verifyRemembered(token);
    if (verdict === undefined || !verdict.valid) return false;
    new DirectCreate(deps, request, response, verdict.caller).readBody(length);
    return true;
  };
}

/** One create on the direct route, from its headers to its answer. */
class DirectCreate implements CompletedRequest {
  readonly id: string;
  readonly method = 'POST';
  readonly url = ROUTE;
  readonly caller: Caller;
  readonly #deps: DirectCreateDeps;
  readonly #request: IncomingMessage;
  readonly #response: ServerResponse;
  readonly #start = performance.now();
  #log: FastifyBaseLogger | undefined;

  constructor(deps: DirectCreateDeps, request: IncomingMessage, response: ServerResponse, caller: Caller) {
    this.#deps = deps;
    this.#request = request;
    this.#response = response;
    this.caller = caller;
    this.id = requestId(request);
  }

  get ip(): string | undefined {
    return this.#deps.clientAddress(this.#request);
  }

  /** The request's logger, with its id bound as on every line the request causes; made when first used. */
  get log(): FastifyBaseLogger {
    return (this.#log ??= this.#deps.logger.child({ reqId: this.id }));
  }

  /**
   * Reads the body whole: node:http delivers exactly Content-Length bytes
   * (checked against BODY_LIMIT), so the create starts with the chunk that
   * completes them, without waiting for 'end' a tick later. A client that goes
   * away mid-body never completes them and leaves nothing to answer; one too
   * slow gets the server's 408 (client-error-handler.ts).
   */
  readBody(length: number): void {
    let chunks: Buffer[] | undefined;
    let received = 0;
    this.#request.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received < length) (chunks ??= []).push(chunk);
      else if (chunks === undefined) this.#create(chunk.toString('utf8'));
      else this.#create(Buffer.concat([...chunks, chunk]).toString('utf8'));
    });
  }

  #create(text: string): void {
    let plant: unknown;
    try {
      plant = parseExactJson(text);
    } catch (error) {
      this.#fail(error);
      return;
    }
    if (!validateNewPlant(plant)) {
      this.#fail(invalidPlant(validateNewPlant.errors!));
      return;
    }
    try {
      createCounted(this.#deps.writer, this.#deps.metrics, plant as NewPlant, (error, created) => {
        if (error === undefined) this.#answer(200, serializePlant(created as Plant), undefined);
        else this.#fail(error);
      });
    } catch (error) {
      this.#fail(error);
    }
  }

  #fail(error: unknown): void {
    const answer = toServiceError(error as Error);
    logErrorAnswer(this.log, error, answer);
    this.#answer(answer.status, serializeError(answer.toBody()), answer.headers);
  }

  #answer(status: number, body: string, extra: Readonly<Record<string, string>> | undefined): void {
    let headers: (string | number)[];
    if (extra === undefined) {
      headers = ANSWER_HEADERS.slice();
      headers[ID_AT] = this.id;
      headers[LENGTH_AT] = Buffer.byteLength(body);
    } else {
      // An error's own headers go between the request id and the body's, as Fastify writes them.
      headers = [...SECURITY, 'x-request-id', this.id];
      for (const name in extra) headers.push(name, extra[name]!);
      headers.push('content-type', JSON_TYPE, 'content-length', Buffer.byteLength(body));
    }
    // Headers set before (a stopping server's Connection: close, connection-drain.ts) are kept.
    this.#response.writeHead(status, headers as string[]);
    this.#response.end(body);
    this.#deps.record(this, ROUTE, status, (performance.now() - this.#start) / 1000);
  }
}
