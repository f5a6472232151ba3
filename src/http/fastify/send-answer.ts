import type { FastifyReply } from 'fastify';
import { type ExtraHeaders, JSON_CONTENT_TYPE } from '../answer-headers.js';

/**
 * Sends an answer whose JSON is already written. Fastify sends a string
 * with a JSON content type as it is, without serialising it again; the
 * security headers and request id were set by the onRequest hook, so the
 * headers come in the order every answer has (answer-headers.ts).
 */
export function sendAnswer(reply: FastifyReply, status: number, body: string, headers: ExtraHeaders): void {
  reply.code(status);
  if (headers !== undefined) reply.headers(headers);
  void reply.type(JSON_CONTENT_TYPE).send(body);
}
