import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What a well-formed incoming X-Request-Id looks like: short, printable, no spaces or quotes. */
const WELL_FORMED = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * The request id: the client's (or proxy's) `X-Request-Id` when it is well
 * formed, so that one id follows a request through every hop; otherwise a new
 * UUID. It is on every log line the request causes and echoed in the answer.
 */
export function requestId(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  return typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomUUID();
}
