import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../errors.js';
import type { TokenRecord } from '../store/store.js';
import type { TokenVerifier } from '../tokens/token-verifier.js';

/** `Bearer <b64token>` (RFC 6750, section 2.1); the scheme word is case-insensitive. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

declare module 'fastify' {
  interface FastifyRequest {
    /** The token that authenticated this request, once the bearer hook passed. */
    token: TokenRecord | null;
  }
}

/** An onRequest hook that lets a request through only with a valid bearer token. */
export function bearerAuth(verifier: TokenVerifier) {
  return async function requireBearerToken(request: FastifyRequest): Promise<void> {
    const header = request.headers.authorization;
    const token = header === undefined ? undefined : BEARER.exec(header)?.[1];
    if (token === undefined) throw new ServiceError('MISSING_CREDENTIALS');
    const verdict = await verifier.verify(token);
    if (!verdict.valid) {
      request.log.info({ reason: verdict.reason }, 'bearer token refused');
      throw new ServiceError('INVALID_TOKEN');
    }
    request.token = verdict.token;
  };
}
