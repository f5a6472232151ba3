import type { BaseLogger } from 'pino';
import type { ServeConfig } from '../config/config.js';
import type { Store } from '../store/store.js';
import { LoadedVerifier } from './loaded-verifier.js';
import { OpaqueThenJwtVerifier } from './opaque-then-jwt-verifier.js';
import { type LookupOutcome, StoreTokenVerifier } from './store-token-verifier.js';
import type { TokenUses } from './token-uses.js';
import type { TokenVerifier } from './token-verifier.js';

export type TokenSettings = Pick<
  ServeConfig,
  | 'tokenCacheTtlMs'
  | 'jwtIssuer'
  | 'jwtAudience'
  | 'jwtJwksUrl'
  | 'jwtJwksFile'
  | 'jwtScope'
  | 'jwtClockSkewS'
  | 'jwtJwksCooldownMs'
  | 'jwtJwksMaxAgeMs'
>;

/** Chosen once at start: the store's tokens, and JWTs too when JWT_ISSUER is set; expiry, the memories and the key set go by `clock.now`. */
export function createTokenVerifier(
  settings: TokenSettings,
  store: Store,
  log: Pick<BaseLogger, 'info' | 'warn' | 'error'>,
  clock: { now?: () => number } = {},
  storeTokenOptions: { uses?: TokenUses; onLookup?: (outcome: LookupOutcome) => void } = {},
): TokenVerifier {
  const storeTokens = new StoreTokenVerifier(store, { ttlMs: settings.tokenCacheTtlMs, ...clock, ...storeTokenOptions });
  const issuer = settings.jwtIssuer;
  if (issuer === undefined) return storeTokens;
  // The settings were checked together at load: an issuer comes with an audience.
  const audience = settings.jwtAudience;
  if (audience === undefined) throw new Error('JWT_ISSUER is set without JWT_AUDIENCE');
  // jose is loaded only when JWTs are accepted.
  const jwt = new LoadedVerifier(async () => {
    const { createJwtVerifier } = await import('./jwt/create-jwt-verifier.js');
    return createJwtVerifier({ ...settings, jwtIssuer: issuer, jwtAudience: audience }, log, clock);
  });
  return new OpaqueThenJwtVerifier(storeTokens, jwt);
}
