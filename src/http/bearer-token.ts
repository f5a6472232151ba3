import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ServiceError } from '../errors.js';
import type { Caller, TokenVerifier, Verification } from '../tokens/token-verifier.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuthFailureLimiter } from './auth-failure-limiter.js';

/** `Bearer <b64token>` (RFC 6750, section 2.1); the scheme word is case-insensitive. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** The spelling nearly every client sends, one space and nothing after: tested without making a match. */
const USUAL_BEARER = /^Bearer [A-Za-z0-9\-._~+/]+=*$/;
const USUAL_PREFIX = 'Bearer '.length;

/** The token of an Authorization header, or undefined when the header is absent or not a bearer token. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return USUAL_BEARER.test(header) ? header.slice(USUAL_PREFIX) : BEARER.exec(header)?.[1];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request acts for, once the bearer hook passed it. */
    caller: Caller | null;
  }
}

/**
 * An onRequest hook that lets a request through only with a valid bearer
 * token. Written with a callback rather than async: a remembered token, the
 * common case, is then decided without a promise.
 */
export function bearerAuth(verifier: TokenVerifier, limiter: AuthFailureLimiter, metrics: Metrics) {
  /** A failed authentication: 401, or 429 once the address has failed too often. */
  const refuse = (request: FastifyRequest, error: ServiceError, reason: string, done: HookHandlerDoneFunction): void => {
    const waitSeconds = limiter.recordFailure(request.ip);
    if (waitSeconds === undefined) {
      metrics.authFailures.inc({ reason });
      done(error);
      return;
    }
    metrics.authFailures.inc({ reason: 'rate_limited' });
    request.log.warn({ ip: request.ip }, 'too many failed authentications from this address');
    done(new ServiceError('TOO_MANY_AUTH_FAILURES', { headers: { 'retry-after': String(waitSeconds) } }));
  };

  const decide = (request: FastifyRequest, verification: Verification, done: HookHandlerDoneFunction): void => {
    if (verification.valid) {
      request.caller = verification.caller;
      done();
      return;
    }
    if (verification.reason === 'jwt_unavailable') {
      // The token may be fine: the client is not at fault, and its address is not counted towards 429.
      metrics.authFailures.inc({ reason: verification.reason });
      request.log.warn({ reason: verification.reason, problem: verification.detail }, 'bearer token could not be checked');
      done(new ServiceError('IDP_UNAVAILABLE', { headers: { 'retry-after': String(verification.retryAfterSeconds) } }));
      return;
    }
    const { reason, caller } = verification;
    request.log.info({ reason, sub: caller?.subject, iss: caller?.issuer }, 'bearer token refused');
    if (verification.reason === 'jwt_scope') {
      // Authentic but not allowed: not a failed authentication, so not counted towards 429 either.
      metrics.authFailures.inc({ reason });
      const challenge = `Bearer realm="plantstore", error="insufficient_scope", scope="${verification.scope}"`;
      done(new ServiceError('INSUFFICIENT_SCOPE', { detail: verification.scope, headers: { 'www-authenticate': challenge } }));
      return;
    }
    refuse(request, new ServiceError('INVALID_TOKEN', verification.detail === undefined ? {} : { detail: verification.detail }), reason, done);
  };

  return function requireBearerToken(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) {
      refuse(request, new ServiceError('MISSING_CREDENTIALS'), 'missing', done);
      return;
    }
    const remembered = verifier.verifyRemembered(token);
    if (remembered !== undefined) {
      decide(request, remembered, done);
      return;
    }
    verifier.verify(token).then((verification) => decide(request, verification, done), done);
  };
}
