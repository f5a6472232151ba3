import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { SECURITY_HEADERS } from '../answer-headers.js';
import { bodyTooLarge, errorAnswer } from '../error-answer.js';
import { answerBeforeBody } from '../server/answer-before-body.js';
import { sendAnswer } from './send-answer.js';

type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void;

/**
 * Fastify's error handlers, for an app whose bodies are limited to
 * `bodyLimit` bytes: every error of every route, ours or Fastify's, answered
 * as the catalogue says (error-answer.ts).
 *
 * Most come before the request's body is read (a refused token or media
 * type, a body over the limit): such an answer is the request's only one,
 * and the connection closes after it unless the body had arrived whole
 * (server/answer-before-body.ts).
 */
export function errorHandlers(bodyLimit: number): { errorHandler: ErrorHandler; frameworkErrors: ErrorHandler } {
  const tooLarge = bodyTooLarge(bodyLimit);
  const errorHandler: ErrorHandler = (error, request, reply) => {
    const answer = errorAnswer(error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? tooLarge : error, request.log);
    answerBeforeBody(request.raw, reply.raw, () => sendAnswer(reply, answer.status, answer.body, answer.headers));
  };
  return {
    errorHandler,
    // A request Fastify refuses before routing (a path whose percent-encoding is broken) runs no
    // hook, so the headers every answer has are set here; the error is then answered as any other.
    frameworkErrors: (error, request, reply) => {
      reply.headers(SECURITY_HEADERS);
      reply.header('x-request-id', request.id);
      errorHandler(error, request, reply);
    },
  };
}
