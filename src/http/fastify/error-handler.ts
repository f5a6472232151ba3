import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { SECURITY_HEADERS } from '../answer-headers.js';
import { bodyTooLarge, errorAnswer } from '../error-answer.js';
import { answerBeforeBody } from '../server/answer-before-body.js';
import { sendAnswer } from './send-answer.js';

type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void;

/** Most errors come before the body is read, so each answer goes through server/answer-before-body.ts. */
export function errorHandlers(bodyLimit: number): { errorHandler: ErrorHandler; frameworkErrors: ErrorHandler } {
  const tooLarge = bodyTooLarge(bodyLimit);
  const errorHandler: ErrorHandler = (error, request, reply) => {
    const answer = errorAnswer(error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? tooLarge : error, request.log);
    answerBeforeBody(request.raw, reply.raw, () => sendAnswer(reply, answer.status, answer.body, answer.headers));
  };
  return {
    errorHandler,
    // A request refused before routing (broken percent-encoding) runs no hook, so the usual headers are set here.
    frameworkErrors: (error, request, reply) => {
      reply.headers(SECURITY_HEADERS);
      reply.header('x-request-id', request.id);
      errorHandler(error, request, reply);
    },
  };
}
