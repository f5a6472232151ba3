import type { Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, onResponseHookHandler, onSendHookHandler } from 'fastify';
import type { PolicyName } from '../../rate-limits/rate-policy.js';
import type { Caller } from '../../tokens/token-verifier.js';
import type { RequestSpans } from '../../tracing/request-spans.js';
import type { ExtraHeaders } from '../answer-headers.js';
import type { CreatePipeline, PendingCreate } from '../create-pipeline.js';
import type { RequestLog } from '../error-answer.js';
import { allowOnly } from './method-not-allowed.js';
import { sendAnswer } from './send-answer.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
    /** For the access line. */
    rateLimited: PolicyName | undefined;
    span: Span | undefined;
    /** For the span's `error.type`. */
    errorBody: string | undefined;
  }
}

/** Headers are checked in onRequest, before the body is read; the app's JSON parser hands the body over as text for the pipeline. */
export function plantsRoute(app: FastifyInstance, pipeline: CreatePipeline, spans: RequestSpans | undefined): void {
  const admit: onRequestHookHandler = (request, _reply, done) => {
    pipeline.admit(request.headers, request.ip, request, (refusal, caller) => {
      if (caller !== undefined) request.caller = caller;
      done(refusal);
    });
  };
  app.post('/plants', {
    ...(spans === undefined ? { onRequest: admit } : { ...spanHooks(spans), onRequest: [startSpan(spans), admit] }),
    // Not async: the answer is sent from the group commit's callback, with no promise per request.
    handler: (request, reply) => {
      pipeline.create(typeof request.body === 'string' ? request.body : '', new FastifyCreate(request, reply));
    },
  });
  allowOnly(app, '/plants', ['POST']);
}

/** Starts before the token is checked, so that a refusal has its span too. */
function startSpan(spans: RequestSpans): onRequestHookHandler {
  return (request, _reply, done) => {
    request.span = spans.start(request.headers, { clientAddress: request.ip, serverPort: request.socket.localPort });
    done();
  };
}

function spanHooks(spans: RequestSpans): { onSend: onSendHookHandler; onResponse: onResponseHookHandler } {
  return {
    onSend: (request, reply, payload, done) => {
      if (reply.statusCode >= 400 && typeof payload === 'string') request.errorBody = payload;
      done(null, payload);
    },
    onResponse: (request, reply, done) => {
      if (request.span !== undefined) spans.end(request.span, reply.statusCode, request.errorBody);
      done();
    },
  };
}

class FastifyCreate implements PendingCreate {
  readonly log: RequestLog;
  readonly caller: Caller;
  readonly span: Span | undefined;
  readonly #request: FastifyRequest;
  readonly #reply: FastifyReply;

  constructor(request: FastifyRequest, reply: FastifyReply) {
    this.log = request.log;
    // onRequest admitted it: a request reaches the handler only with its caller.
    this.caller = request.caller!;
    this.span = request.span;
    this.#request = request;
    this.#reply = reply;
  }

  get rateLimited(): PolicyName | undefined {
    return this.#request.rateLimited;
  }

  set rateLimited(policy: PolicyName | undefined) {
    this.#request.rateLimited = policy;
  }

  answer(status: number, body: string, headers: ExtraHeaders): void {
    sendAnswer(this.#reply, status, body, headers);
  }
}
