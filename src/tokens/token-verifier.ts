import type { Store, TokenRecord } from '../store/store.js';
import { hashToken } from './api-token.js';

/** The verdict on a presented token. */
export type Verification = { valid: true; token: TokenRecord } | { valid: false; reason: 'unknown' | 'revoked' | 'expired' };

interface Remembered {
  record: TokenRecord | undefined;
  fetchedAt: number;
}

/**
 * Checks presented tokens against the store, remembering each answer for at
 * most `ttlMs` so that a busy client costs no store round trip, and no hash,
 * per request. Revocation happens in the store, possibly from another process
 * or instance; the short memory bounds how long a revoked token can still
 * pass. Expiry is checked on every request against the remembered record, so
 * it is exact.
 */
export class TokenVerifier {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Keyed by the presented token, so that a hit costs one map lookup. */
  readonly #remembered = new Map<string, Remembered>();
  /** Unknown tokens are remembered too; the bound keeps a flood of random tokens from growing memory. */
  static readonly MAX_REMEMBERED = 10_000;

  constructor(store: Store, options: { ttlMs: number; now?: () => number }) {
    this.#store = store;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  /** The verdict from memory, or undefined when the store must be asked (see `verify`). */
  verifyRemembered(token: string): Verification | undefined {
    const now = this.#now();
    const remembered = this.#remembered.get(token);
    if (remembered === undefined || now - remembered.fetchedAt >= this.#ttlMs) return undefined;
    return verdict(remembered.record, now);
  }

  async verify(token: string): Promise<Verification> {
    const known = this.verifyRemembered(token);
    if (known !== undefined) return known;
    const now = this.#now();
    const record = await this.#store.findTokenByHash(hashToken(token));
    if (this.#ttlMs > 0) {
      if (this.#remembered.size >= TokenVerifier.MAX_REMEMBERED) this.#remembered.clear();
      this.#remembered.set(token, { record, fetchedAt: now });
    }
    return verdict(record, this.#now());
  }
}

function verdict(record: TokenRecord | undefined, now: number): Verification {
  if (record === undefined) return { valid: false, reason: 'unknown' };
  if (record.revokedAt !== null) return { valid: false, reason: 'revoked' };
  if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return { valid: false, reason: 'expired' };
  return { valid: true, token: record };
}
