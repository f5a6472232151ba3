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
  logger: Logger;
  clientAddress: (request: IncomingMessage) => string | undefined;
  bodyLimit: number;
  spans: RequestSpans | undefined;
}

/** The app's global Fastify hooks whose work this adapter does itself; a test fails on a global hook missing here. */
export const GLOBAL_HOOKS_APPLIED: Readonly<Record<string, readonly string[]>> = {
  onRequest: ['answerHeaders'],
  onResponse: ['recordCompletion'],
};

/** As Fastify names the route in the latency histogram. */
const ROUTE = '/plants';

/**
 * POST /plants on node:http, spared Fastify's per-request machinery (docs/performance.md): it takes only creates whose
 * headers settle everything but the body and whose Content-Length is within BODY_LIMIT; every other request goes to Fastify.
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

  get log(): Logger {
    return (this.#log ??= this.#deps.logger.child({ reqId: this.id }));
  }

  /** node:http delivers exactly Content-Length bytes: the create starts with the chunk that completes them, not on 'end' a tick later. */
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
