import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { SECURITY_HEADERS } from '../answer-headers.js';
import { errorAnswer } from '../error-answer.js';
import { sendAnswer } from './send-answer.js';

/** Fastify's error handler: every error of every route, ours or Fastify's, answered as the catalogue says (error-answer.ts). */
export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const answer = errorAnswer(error, request.log);
  if (answer.code === 'BODY_TOO_LARGE') {
    // The rest of the body is not read; the connection cannot be reused.
    reply.header('connection', 'close');
  }
  sendAnswer(reply, answer.status, answer.body, answer.headers);
}

/**
 * Fastify's `frameworkErrors`: a request it refuses before routing (a path
 * whose percent-encoding is broken) runs no hook, so the headers every
 * answer has are set here; the error is then answered as any other.
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.headers(SECURITY_HEADERS);
  reply.header('x-request-id', request.id);
  errorHandler(error, request, reply);
}
