import type { Store, TokenRecord } from '../store/store.js';
import { hashToken } from './api-token.js';

/** The verdict on a presented token. */
export type Verification = { valid: true; token: TokenRecord } | { valid: false; reason: 'unknown' | 'revoked' | 'expired' };

/**
 * Checks presented tokens against the store, remembering each answer for at
 * most `ttlMs` so that a busy client costs no store round trip per request.
 * Revocation happens in the store, possibly from another process; the short
 * memory bounds how long a revoked token can still pass. Expiry is checked
 * on every request against the remembered record, so it is exact.
 */
export class TokenVerifier {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { record: TokenRecord | undefined; fetchedAt: number }>();
  /** Unknown tokens are remembered too; the bound keeps a flood of random tokens from growing memory. */
  static readonly MAX_CACHED = 10_000;

  constructor(store: Store, options: { ttlMs: number; now?: () => number }) {
    this.#store = store;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  async verify(token: string): Promise<Verification> {
    const now = this.#now();
    const hash = hashToken(token);
    let cached = this.#cache.get(hash);
    if (cached === undefined || now - cached.fetchedAt >= this.#ttlMs) {
      cached = { record: await this.#store.findTokenByHash(hash), fetchedAt: now };
      if (this.#cache.size >= TokenVerifier.MAX_CACHED) this.#cache.clear();
      if (this.#ttlMs > 0) this.#cache.set(hash, cached);
    }
    const { record } = cached;
    if (record === undefined) return { valid: false, reason: 'unknown' };
    if (record.revokedAt !== null) return { valid: false, reason: 'revoked' };
    if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return { valid: false, reason: 'expired' };
    return { valid: true, token: record };
  }
}
