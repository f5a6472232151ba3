import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
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
