import type { TokenRecord } from '../store/store.js';

/**
 * What a token is at `now`, as `token list` shows it: `retiring` while a
 * rotation's grace lets it go on working until its `revokedAt`.
 */
export type TokenStatus = 'active' | 'retiring' | 'revoked' | 'expired';

export function tokenStatus(token: TokenRecord, now: Date): TokenStatus {
  if (token.revokedAt !== null && token.revokedAt <= now) return 'revoked';
  if (token.expiresAt !== null && token.expiresAt <= now) return 'expired';
  return token.revokedAt === null ? 'active' : 'retiring';
}
