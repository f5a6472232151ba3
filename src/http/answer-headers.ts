// All three writers of answers (Fastify, the fast path, the client-error handler) write these headers in one order.

/** No sniffing: a JSON error must never render as HTML; no caching: answers depend on a token. */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
} as const;

/** Every body the service writes is JSON in UTF-8 (RFC 8259, section 8.1). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** An error's own headers (Retry-After, WWW-Authenticate, Allow). */
export type ExtraHeaders = Readonly<Record<string, string>> | undefined;

/** A flat list is node:http's fastest form. */
const SECURITY_LIST: readonly string[] = Object.entries(SECURITY_HEADERS).flat();
const USUAL: readonly (string | number)[] = [...SECURITY_LIST, 'x-request-id', '', 'content-type', JSON_CONTENT_TYPE, 'content-length', 0];
const ID_AT = SECURITY_LIST.length + 1;
const LENGTH_AT = USUAL.length - 1;

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

/** For a connection that closes with no request read: there is no request id to echo. */
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
