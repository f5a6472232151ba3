import type { BaseLogger } from 'pino';
import type { TokenSettings } from '../create-token-verifier.js';
import type { TokenVerifier } from '../token-verifier.js';
import { JwtVerifier } from './jwt-verifier.js';
import { KeySet } from './key-set.js';
import { discoveredKeySet, keySetAt, keySetFile, type KeySetSource } from './key-set-source.js';

export function createJwtVerifier(
  settings: TokenSettings & { jwtIssuer: string; jwtAudience: string },
  log: Pick<BaseLogger, 'info' | 'warn' | 'error'>,
  clock: { now?: () => number },
): TokenVerifier {
  const issuer = settings.jwtIssuer;
  const source: KeySetSource =
    settings.jwtJwksFile !== undefined
      ? keySetFile(settings.jwtJwksFile)
      : settings.jwtJwksUrl !== undefined
        ? keySetAt(settings.jwtJwksUrl)
        : discoveredKeySet(issuer);
  const keys = new KeySet(source, { cooldownMs: settings.jwtJwksCooldownMs, maxAgeMs: settings.jwtJwksMaxAgeMs, log, ...clock });
  const rules = { issuer, audience: settings.jwtAudience, scope: settings.jwtScope, clockSkewS: settings.jwtClockSkewS };
  return new JwtVerifier(rules, keys, clock);
}
