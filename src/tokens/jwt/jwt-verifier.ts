import { type CryptoKey, errors, type JWTPayload, jwtVerify, type JWTVerifyGetKey, type JWTVerifyOptions, type JWTVerifyResult } from 'jose';
import { TokenMemory } from '../token-memory.js';
import type { Caller, InvalidReason, TokenVerifier, Verification } from '../token-verifier.js';
import { KeySetUnavailableError, type VerificationKeys } from './key-set.js';

/** The algorithms accepted; a key is used only with the algorithm of its type (and its `alg`, when it names one). */
export const JWT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];

/**
 * Keys tried for a header that fits several: enough for a provider publishing its next and previous keys beside the
 * current one, few enough that a forged token costs a handful of signature checks.
 */
export const MOST_CANDIDATE_KEYS = 3;

const EXPIRY_MARGIN_MS = 1000;

export interface JwtRules {
  readonly issuer: string;
  readonly audience: string;
  readonly scope: string;
  readonly clockSkewS: number;
}

/**
 * JWT access tokens of one issuer (RFC 9068). One that passes is remembered until shortly before its `exp`, and not
 * past the time its key may be trusted, so a reused token costs a map lookup, not a signature check.
 */
export class JwtVerifier implements TokenVerifier {
  readonly #rules: JwtRules;
  readonly #keys: VerificationKeys;
  readonly #now: () => number;
  /** Valid tokens only, so only the issuer's; keyed by the token itself: a hash would cost a reused token more than the lookup. */
  readonly #remembered = new TokenMemory<Verification>({ maxEntries: 10_000, maxBytes: 16 * 1024 * 1024 });

  constructor(rules: JwtRules, keys: VerificationKeys, options: { now?: () => number } = {}) {
    this.#rules = rules;
    this.#keys = keys;
    this.#now = options.now ?? Date.now;
  }

  verifyRemembered(token: string): Verification | undefined {
    return this.#remembered.get(token, this.#now());
  }

  async verify(token: string): Promise<Verification> {
    const known = this.verifyRemembered(token);
    if (known !== undefined) return known;
    const rules = this.#rules;
    const now = this.#now();
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      ({ payload, protectedHeader: { typ } } = await verifyWithCandidates(token, this.#keys.key, {
        issuer: rules.issuer,
        audience: rules.audience,
        algorithms: JWT_ALGORITHMS,
        clockTolerance: rules.clockSkewS,
        currentDate: new Date(now),
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      return refusalOf(error);
    }
    const caller: Caller = { subject: typeof payload.sub === 'string' ? payload.sub : undefined, issuer: rules.issuer };
    if (!isAccessTokenType(typ)) {
      return { valid: false, reason: 'jwt_unsupported', detail: 'the token is not an access token (its typ is neither JWT nor at+jwt)', caller };
    }
    // jose checks `iat` only against a maximum age; one from the future is refused here.
    if (payload.iat !== undefined && payload.iat > now / 1000 + rules.clockSkewS) {
      return { valid: false, reason: 'jwt_not_yet_valid', detail: 'the token was issued in the future', caller };
    }
    if (!grants(payload.scope, rules.scope, false) && !grants(payload['scp'], rules.scope, true)) {
      return { valid: false, reason: 'jwt_scope', scope: rules.scope, caller };
    }
    const verdict: Verification = { valid: true, caller };
    const until = Math.min(payload.exp! * 1000 - EXPIRY_MARGIN_MS, this.#keys.trustedUntil());
    if (until > now) this.#remembered.set(token, verdict, until);
    return verdict;
  }

  start(): Promise<void> {
    return this.#keys.start();
  }
}

class TooManyCandidateKeys extends Error {
  override name = 'TooManyCandidateKeys';
}

/** On JWKSMultipleMatchingKeys each key it yields is tried in turn, as jose's documentation shows. */
async function verifyWithCandidates(token: string, keys: JWTVerifyGetKey<CryptoKey>, options: JWTVerifyOptions): Promise<JWTVerifyResult> {
  try {
    return await jwtVerify(token, keys, options);
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error;
    const candidates: CryptoKey[] = [];
    for await (const candidate of error) {
      if (candidates.length === MOST_CANDIDATE_KEYS) throw new TooManyCandidateKeys();
      candidates.push(candidate);
    }
    for (const candidate of candidates) {
      try {
        return await jwtVerify(token, candidate, options);
      } catch (failure) {
        if (!(failure instanceof errors.JWSSignatureVerificationFailed)) throw failure;
      }
    }
    throw candidates.length === 0 ? new errors.JWKSNoMatchingKey() : new errors.JWSSignatureVerificationFailed();
  }
}

/** `typ` may be absent, `JWT`, or `at+jwt` (RFC 9068, section 2.1); media types are case-insensitive and may omit `application/`. */
function isAccessTokenType(typ: string | undefined): boolean {
  if (typ === undefined) return true;
  const type = typ.toLowerCase().replace(/^application\//, '');
  return type === 'jwt' || type === 'at+jwt';
}

function grants(claim: unknown, scope: string, arrayAllowed: boolean): boolean {
  if (typeof claim === 'string') return claim.split(' ').includes(scope);
  return arrayAllowed && Array.isArray(claim) && claim.includes(scope);
}

/** jose's errors as refusals; jose checks the signature before the claims, so a claim's payload is authentic. */
function refusalOf(error: unknown): Verification {
  if (error instanceof KeySetUnavailableError) {
    return { valid: false, reason: 'jwt_unavailable', retryAfterSeconds: error.retryAfterSeconds, detail: error.message };
  }
  if (error instanceof errors.JWTExpired) return invalid('jwt_expired', 'the token has expired', error.payload);
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'iss':
        return invalid('jwt_issuer', 'the token is from another issuer', error.payload);
      case 'aud':
        return invalid('jwt_audience', 'the token is for another audience', error.payload);
      case 'nbf':
        return invalid('jwt_not_yet_valid', 'the token is not valid yet', error.payload);
      default:
        return invalid('jwt_malformed', `the token's ${error.claim} claim is missing or invalid`, error.payload);
    }
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return invalid('jwt_signature', 'the signature does not verify');
  if (error instanceof TooManyCandidateKeys) {
    return invalid('jwt_unknown_key', `more than ${MOST_CANDIDATE_KEYS} keys of the issuer fit the token's header, and at most ${MOST_CANDIDATE_KEYS} are tried: it needs a kid`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return invalid('jwt_algorithm', `the algorithm must be one of ${JWT_ALGORITHMS.join(', ')}`);
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JWKSInvalid) {
    return invalid('jwt_unknown_key', "no key of the issuer matches the token's kid and alg");
  }
  if (error instanceof errors.JOSENotSupported) return invalid('jwt_unsupported', 'the token needs a header extension (crit) this service does not understand');
  if (error instanceof errors.JOSEError) return invalid('jwt_malformed', 'not a well-formed JWT');
  // WebCrypto refuses a key of the issuer's set that it cannot use (an RSA key under 2048 bits, a malformed JWK).
  if (error instanceof TypeError || error instanceof DOMException) return invalid('jwt_unknown_key', "the issuer's key for this token cannot be used");
  throw error;
}

function invalid(reason: InvalidReason, detail: string, payload?: JWTPayload): Verification {
  if (payload === undefined || typeof payload.iss !== 'string') return { valid: false, reason, detail };
  return { valid: false, reason, detail, caller: { subject: typeof payload.sub === 'string' ? payload.sub : undefined, issuer: payload.iss } };
}
