import type { RatePolicy } from '../rate-limits/rate-policy.js';

/** Who a request acts for: logs name the caller, never the token. */
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
 * A refusal is: not valid here (401); valid without the scope (403); or uncheckable because the identity provider's
 * keys cannot be fetched (503: the token may be fine, retry).
 */
export type Verification =
  | { readonly valid: true; readonly caller: Caller }
  | { readonly valid: false; readonly reason: InvalidReason; readonly detail?: string; readonly caller?: Caller }
  | { readonly valid: false; readonly reason: 'jwt_scope'; readonly scope: string; readonly caller: Caller }
  | { readonly valid: false; readonly reason: 'jwt_unavailable'; readonly retryAfterSeconds: number; readonly detail: string };

/** Checks bearer tokens (RFC 6750); the HTTP layer knows only this interface. */
export interface TokenVerifier {
  /** From memory, or undefined when it needs I/O or a signature check: synchronous, so a reused token costs no promise. */
  verifyRemembered(token: string): Verification | undefined;
  verify(token: string): Promise<Verification>;
  /** Called once before the server takes requests; throws only for a setting proven wrong (a ConfigError). */
  start(): Promise<void>;
}
