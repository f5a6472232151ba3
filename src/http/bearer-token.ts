/** RFC 6750's b64token (section 2.1): the characters a bearer token is made of. */
export const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** The scheme word is case-insensitive. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** The spelling nearly every client sends, one space and nothing after: tested without making a match. */
const USUAL_BEARER = /^Bearer [A-Za-z0-9\-._~+/]+=*$/;
const USUAL_PREFIX = 'Bearer '.length;

export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return USUAL_BEARER.test(header) ? header.slice(USUAL_PREFIX) : BEARER.exec(header)?.[1];
}
