import type { Store, TokenRecord } from '../store/store.js';
import { hashToken } from './api-token.js';
import { TokenMemory } from './token-memory.js';
import type { Caller, TokenVerifier, Verification } from './token-verifier.js';

interface Remembered {
  record: TokenRecord | undefined;
  /** Made once per lookup, so that a remembered token costs no allocation beyond its verdict. */
  caller: Caller | undefined;
  /** The verdict while the token is valid, made once too: a remembered valid token allocates nothing. */
  valid: Verification | undefined;
}

/**
 * The store's opaque tokens, checked against the store, each answer
 * remembered for at most `ttlMs` so that a busy client costs no store round
 * trip, and no hash, per request. Revocation happens in the store, possibly
 * from another process or instance; the short memory bounds how long a
 * revoked token can still pass. Expiry is checked on every request against
 * the remembered record, so it is exact.
 */
export class StoreTokenVerifier implements TokenVerifier {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Unknown tokens are remembered too, as unknown. */
  readonly #remembered = new TokenMemory<Remembered>();

  constructor(store: Store, options: { ttlMs: number; now?: () => number }) {
    this.#store = store;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  verifyRemembered(token: string): Verification | undefined {
    const now = this.#now();
    const remembered = this.#remembered.get(token, now);
    return remembered === undefined ? undefined : verdict(remembered, now);
  }

  async verify(token: string): Promise<Verification> {
    const known = this.verifyRemembered(token);
    if (known !== undefined) return known;
    const now = this.#now();
    const record = await this.#store.findTokenByHash(hashToken(token));
    const caller = record === undefined ? undefined : { name: record.name };
    const remembered = { record, caller, valid: caller === undefined ? undefined : ({ valid: true, caller } as const) };
    if (this.#ttlMs > 0) this.#remembered.set(token, remembered, now + this.#ttlMs);
    return verdict(remembered, this.#now());
  }

  async start(): Promise<void> {}
}

function verdict({ record, valid }: Remembered, now: number): Verification {
  if (record === undefined || valid === undefined) return { valid: false, reason: 'unknown' };
  if (record.revokedAt !== null) return { valid: false, reason: 'revoked' };
  if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return { valid: false, reason: 'expired' };
  return valid;
}
