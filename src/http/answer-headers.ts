/**
 * The headers of every answer, in one place for the three writers of
 * answers: Fastify's routes, the node:http fast path and the handler of
 * requests that HTTP itself failed. Each writes them in the same order:
 * security headers, request id, the error's own headers, then the body's.
 */

/**
 * On every answer: no content sniffing (a JSON error must never be rendered
 * as HTML), and no caching of answers that depend on a token.
 */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
} as const;

/** Every body the service writes is JSON in UTF-8 (RFC 8259, section 8.1). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** An error's own headers (Retry-After, WWW-Authenticate, Allow), or undefined for none. */
export type ExtraHeaders = Readonly<Record<string, string>> | undefined;

/** The security headers as name, value, name, value: node:http's fastest form. */
const SECURITY_LIST: readonly string[] = Object.entries(SECURITY_HEADERS).flat();
/** The usual answer's headers, with two places to fill: the request id and the body's length. */
const USUAL: readonly (string | number)[] = [...SECURITY_LIST, 'x-request-id', '', 'content-type', JSON_CONTENT_TYPE, 'content-length', 0];
const ID_AT = SECURITY_LIST.length + 1;
const LENGTH_AT = USUAL.length - 1;

/** A JSON answer's headers for node:http's `writeHead`, as a flat list of names and values. */
export function answerHeaderList(requestId: string, extra: ExtraHeaders, bodyBytes: number): (string | number)[] {
  if (extra === undefined) {
    const headers = USUAL.slice();
    headers[ID_AT] = requestId;
    headers[LENGTH_AT] = bodyBytes;
    return headers;
  }
  const headers: (string | number)[] = [...SECURITY_LIST, 'x-request-id', requestId];
  for (const name in extra) headers.push(name, extra[name]!);
  headers.push('content-type', JSON_CONTENT_TYPE, 'content-length', bodyBytes);
  return headers;
}

/**
 * A whole answer's head as raw HTTP/1.1 lines, for a connection whose
 * request never reached a route and that closes after it: there is no
 * request id to echo, since no request was read.
 */
export function rawAnswerHead(status: number, reason: string, bodyBytes: number, extra: ExtraHeaders = undefined): string {
  const lines = [
    `HTTP/1.1 ${status} ${reason}`,
    `Content-Type: ${JSON_CONTENT_TYPE}`,
    `Content-Length: ${bodyBytes}`,
    ...Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}`),
    ...Object.entries(extra ?? {}).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}
