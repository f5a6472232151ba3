import type { Socket } from 'node:net';
import { answerInFlight } from './node-internals.js';
import { ServiceError } from '../../errors.js';
import { rawAnswerHead } from '../answer-headers.js';
import { errorJson } from '../error-answer.js';

/**
 * The bytes that fail may follow whole requests still being served, and HTTP/1.1 answers in order (RFC 9112, section 9.3.2):
 * the error waits for their answers, or it would be read as the answer to a create that may be stored.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // The parser stays failed: every later chunk on the connection reports the same error.
  if (failing.has(socket)) return;
  failing.add(socket);
  const answer = RAW_ANSWERS[clientErrorCode(error.code)];
  afterAnswersInFlight(socket, () => {
    if (socket.writable) socket.end(answer);
    else socket.destroy();
  });
}

const RAW_ANSWERS = Object.fromEntries(
  (['BAD_REQUEST', 'REQUEST_TIMEOUT', 'HEADERS_TOO_LARGE'] as const).map((code) => {
    const error = new ServiceError(code);
    const body = errorJson(error);
    return [code, rawAnswerHead(error.status, reasonPhrase(error.status), Buffer.byteLength(body)) + body];
  }),
) as Record<ClientErrorCode, string>;

type ClientErrorCode = 'BAD_REQUEST' | 'REQUEST_TIMEOUT' | 'HEADERS_TOO_LARGE';

const failing = new WeakSet<Socket>();

function afterAnswersInFlight(socket: Socket, then: () => void): void {
  const inFlight = answerInFlight(socket);
  if (!inFlight || inFlight.writableFinished || !inFlight.req.complete) {
    then();
    return;
  }
  inFlight.once('finish', () => afterAnswersInFlight(socket, then));
}

function clientErrorCode(code: string | undefined): ClientErrorCode {
  if (code === 'HPE_HEADER_OVERFLOW') return 'HEADERS_TOO_LARGE';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT';
  return 'BAD_REQUEST';
}

function reasonPhrase(status: number): string {
  return { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status] ?? 'Error';
}
