import type { TokenRecord } from '../store/store.js';

/** `retiring`: a rotation's grace lets it work until its `revokedAt`. */
export type TokenStatus = 'active' | 'retiring' | 'revoked' | 'expired';

export function tokenStatus(token: TokenRecord, now: Date): TokenStatus {
  if (token.revokedAt !== null && token.revokedAt <= now) return 'revoked';
  if (token.expiresAt !== null && token.expiresAt <= now) return 'expired';
  return token.revokedAt === null ? 'active' : 'retiring';
}
