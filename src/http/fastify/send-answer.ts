import type { FastifyReply } from 'fastify';
import { type ExtraHeaders, JSON_CONTENT_TYPE } from '../answer-headers.js';

/** Fastify sends a string with a JSON content type as it is; onRequest has set the headers that come first. */
export function sendAnswer(reply: FastifyReply, status: number, body: string, headers: ExtraHeaders): void {
  reply.code(status);
  if (headers !== undefined) reply.headers(headers);
  void reply.type(JSON_CONTENT_TYPE).send(body);
}
