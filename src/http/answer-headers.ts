/**
 * Headers on every answer: no content sniffing (a JSON error must never be
 * rendered as HTML), and no caching of answers that depend on a token.
 */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
} as const;
