import type { RatePolicy } from '../rate-limits/rate-policy.js';

/**
 * Who a request acts for, once its bearer token is accepted: the name of a
 * store token, or the subject and issuer of a JWT. Logs name the caller,
 * never the token. A store token may carry a rate limit of its own.
 */
export type Caller =
  | { readonly name: string; readonly subject?: undefined; readonly issuer?: undefined; readonly rateLimit?: RatePolicy | undefined }
  | { readonly name?: undefined; readonly subject: string | undefined; readonly issuer: string; readonly rateLimit?: undefined };

/** Why a token is refused as invalid (401); the label of the auth-failure metric. */
export type InvalidReason =
  | 'unknown'
  | 'revoked'
  | 'expired'
  | 'jwt_malformed'
  | 'jwt_unsupported'
  | 'jwt_algorithm'
  | 'jwt_unknown_key'
  | 'jwt_signature'
  | 'jwt_issuer'
  | 'jwt_audience'
  | 'jwt_expired'
  | 'jwt_not_yet_valid';

/**
 * The verdict on a presented token. A refusal is one of three: the token is
 * not valid here (401); it is valid but does not grant the scope (403, with
 * the caller it names); or it cannot be checked now because the identity
 * provider's keys cannot be fetched (503: the token may be fine, retry).
 */
export type Verification =
  | { readonly valid: true; readonly caller: Caller }
  | { readonly valid: false; readonly reason: InvalidReason; readonly detail?: string; readonly caller?: Caller }
  | { readonly valid: false; readonly reason: 'jwt_scope'; readonly scope: string; readonly caller: Caller }
  | { readonly valid: false; readonly reason: 'jwt_unavailable'; readonly retryAfterSeconds: number; readonly detail: string };

/**
 * Checks bearer tokens. One implementation is chosen at start: the store's
 * opaque tokens alone, or those and, when JWT_ISSUER is set, JWT access
 * tokens of that issuer. The HTTP layer knows only this interface.
 */
export interface TokenVerifier {
  /**
   * The verdict from memory, or undefined when it needs I/O or a signature
   * check (then call `verify`). Synchronous, so that a client reusing its
   * token is decided without a promise.
   */
  verifyRemembered(token: string): Verification | undefined;
  verify(token: string): Promise<Verification>;
  /**
   * Called once before the server takes requests: fetches up front what
   * verification needs. Throws only for a setting proven wrong (a ConfigError).
   */
  start(): Promise<void>;
}
