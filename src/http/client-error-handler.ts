import type { Socket } from 'node:net';
import { type ErrorCode, ServiceError } from '../errors.js';
import { SECURITY_HEADERS } from './security-headers.js';

/**
 * Answers requests that never reach a route because HTTP itself failed
 * (malformed request line, headers too large, a timeout) with the same
 * Error body as everything else, then closes the connection.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const answer = new ServiceError(clientErrorCode(error.code));
  const body = JSON.stringify(answer.toBody());
  const headers = [
    `HTTP/1.1 ${answer.status} ${reasonPhrase(answer.status)}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}

function clientErrorCode(code: string | undefined): ErrorCode {
  if (code === 'HPE_HEADER_OVERFLOW') return 'HEADERS_TOO_LARGE';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT';
  return 'BAD_REQUEST';
}

function reasonPhrase(status: number): string {
  return { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status] ?? 'Error';
}
