import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { CompletedRequest } from '../../observability/access-line.js';
import type { RecordCompletion } from '../../observability/request-completed.js';
import type { PolicyName } from '../../rate-limits/rate-policy.js';
import type { Caller } from '../../tokens/token-verifier.js';
import type { RequestSpans } from '../../tracing/request-spans.js';
import { answerHeaderList, type ExtraHeaders } from '../answer-headers.js';
import type { CreatePipeline, PendingCreate } from '../create-pipeline.js';
import { requestId } from '../request-id.js';

/** Takes a request and answers it, or returns false and leaves it untouched for Fastify. */
export type DirectRoute = (request: IncomingMessage, response: ServerResponse) => boolean;

export interface FastPathDeps {
  pipeline: CreatePipeline;
  record: RecordCompletion;
  /** The app's logger; a request's own is made from it only when the request logs a line. */
  logger: Logger;
  clientAddress: (request: IncomingMessage) => string | undefined;
  bodyLimit: number;
  /** The SERVER spans of requests, when traces are on. */
  spans: RequestSpans | undefined;
}

/**
 * The app's global Fastify hooks, by name, whose work this adapter does
 * itself, and where: a request served here never runs Fastify's hooks. A
 * test compares this list with the hooks the app has, so a new global hook
 * fails it until the fast path does its work too and the hook is listed.
 */
export const GLOBAL_HOOKS_APPLIED: Readonly<Record<string, readonly string[]>> = {
  // answerHeaderList writes the security headers and the request id.
  onRequest: ['answerHeaders'],
  // FastPathCreate.answer records the access line and the duration.
  onResponse: ['recordCompletion'],
};

/** The route's name in the latency histogram, as Fastify names it. */
const ROUTE = '/plants';

/**
 * POST /plants on node:http, before Fastify sees the request: the route that
 * carries the load, spared Fastify's per-request machinery (a request and a
 * reply object, hook runners, the body's stream handling), which costs more
 * than the rest of the service's own work together (docs/performance.md).
 *
 * It takes only the creates whose headers leave nothing to decide but the
 * body (the pipeline's `rememberedCaller`) and whose body has a stated
 * Content-Length within BODY_LIMIT, at `POST /plants` exactly. Every other
 * request goes to Fastify. From the body on, both adapters run the same
 * pipeline.
 */
export function plantsFastPath(deps: FastPathDeps): DirectRoute {
  return (request, response) => {
    if (request.url !== ROUTE || request.method !== 'POST') return false;
    const headers = request.headers;
    const length = Number(headers['content-length']);
    if (!(length > 0 && length <= deps.bodyLimit) || headers['transfer-encoding'] !== undefined) return false;
    const caller = deps.pipeline.rememberedCaller(headers);
    if (caller === undefined) return false;
    new FastPathCreate(deps, request, response, caller).readBody(length);
    return true;
  };
}

/** One create on the fast path, from its headers to its answer. */
class FastPathCreate implements CompletedRequest, PendingCreate {
  readonly id: string;
  readonly method = 'POST';
  readonly url = ROUTE;
  readonly caller: Caller;
  rateLimited: PolicyName | undefined = undefined;
  readonly span: Span | undefined;
  readonly #deps: FastPathDeps;
  readonly #request: IncomingMessage;
  readonly #response: ServerResponse;
  readonly #start = performance.now();
  #log: Logger | undefined;

  constructor(deps: FastPathDeps, request: IncomingMessage, response: ServerResponse, caller: Caller) {
    this.#deps = deps;
    this.#request = request;
    this.#response = response;
    this.caller = caller;
    this.id = requestId(request);
    this.span = deps.spans?.start(request.headers, { clientAddress: this.ip, serverPort: request.socket.localPort });
  }

  get ip(): string | undefined {
    return this.#deps.clientAddress(this.#request);
  }

  /** The request's logger, with its id bound as on every line the request causes; made when first used. */
  get log(): Logger {
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
      else if (chunks === undefined) this.#deps.pipeline.create(chunk.toString('utf8'), this);
      else this.#deps.pipeline.create(Buffer.concat([...chunks, chunk]).toString('utf8'), this);
    });
  }

  answer(status: number, body: string, headers: ExtraHeaders): void {
    // Headers set before (a stopping server's Connection: close, connection-drain.ts) are kept.
    this.#response.writeHead(status, answerHeaderList(this.id, headers, Buffer.byteLength(body)) as string[]);
    this.#response.end(body);
    this.#deps.record(this, ROUTE, status, (performance.now() - this.#start) / 1000);
    if (this.span !== undefined) this.#deps.spans?.end(this.span, status, body);
  }
}
