import type { Store, TokenRecord } from '../store/store.js';
import { hashToken } from './api-token.js';
import { TokenMemory } from './token-memory.js';
import { TokenUses, type UseSlot } from './token-uses.js';
import type { Caller, TokenVerifier, Verification } from './token-verifier.js';

interface Remembered {
  record: TokenRecord | undefined;
  /** Made once per lookup, so that a remembered token costs no allocation beyond its verdict. */
  caller: Caller | undefined;
  /** The verdict while the token is valid, made once too: a remembered valid token allocates nothing. */
  valid: Verification | undefined;
  /** Where its uses are noted, for `token list`'s last use. */
  use: UseSlot | undefined;
  /** When a valid token in use is looked up again in the background (epoch milliseconds). */
  refreshAt: number;
}

/**
 * The store's opaque tokens, checked against the store, each answer
 * remembered for at most `ttlMs` so that a busy client costs no store round
 * trip, and no hash, per request. Revocation happens in the store, possibly
 * from another process or instance; the short memory bounds how long a
 * revoked token can still pass. Expiry is checked on every request against
 * the remembered record, so it is exact; so is the end of a rotated token's
 * grace, once a lookup has seen the rotation.
 *
 * A valid token still in use once half its memory has passed is looked up
 * again in the background while its requests go on being answered from
 * memory, so that a busy client's requests never wait for the store, and
 * never take the slower way that a token not yet checked takes (the direct
 * route serves only remembered tokens). A revoked token still passes for at
 * most `ttlMs` after the lookup that last saw it valid. Concurrent lookups
 * of one token are one lookup.
 *
 * Each accepted request notes its time in the token's slot of `uses`, one
 * property write; a TokenUseWriter takes them to the store in batches.
 */
export class StoreTokenVerifier implements TokenVerifier {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Unknown tokens are remembered too, as unknown. */
  readonly #remembered = new TokenMemory<Remembered>();
  /** The lookups under way, by token: each token is looked up once at a time. */
  readonly #lookups = new Map<string, Promise<Remembered>>();
  readonly #uses: TokenUses;

  constructor(store: Store, options: { ttlMs: number; now?: () => number; uses?: TokenUses }) {
    this.#store = store;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
    this.#uses = options.uses ?? new TokenUses();
  }

  verifyRemembered(token: string): Verification | undefined {
    const now = this.#now();
    const remembered = this.#remembered.get(token, now);
    if (remembered === undefined) return undefined;
    const known = verdict(remembered, now);
    if (known.valid) {
      remembered.use!.at = now;
      // A failed refresh leaves the memory to lapse; the first request after that looks the token up itself.
      if (now >= remembered.refreshAt) this.#lookUp(token).catch(() => undefined);
    }
    return known;
  }

  async verify(token: string): Promise<Verification> {
    const known = this.verifyRemembered(token);
    if (known !== undefined) return known;
    const remembered = await this.#lookUp(token);
    const now = this.#now();
    const looked = verdict(remembered, now);
    if (looked.valid) remembered.use!.at = now;
    return looked;
  }

  #lookUp(token: string): Promise<Remembered> {
    // With no memory (TOKEN_CACHE_TTL_MS=0) every request sees the store as it is when the request comes.
    if (this.#ttlMs === 0) return this.#fetch(token);
    let lookup = this.#lookups.get(token);
    if (lookup === undefined) {
      lookup = this.#fetch(token).finally(() => this.#lookups.delete(token));
      this.#lookups.set(token, lookup);
    }
    return lookup;
  }

  async #fetch(token: string): Promise<Remembered> {
    const now = this.#now();
    const record = await this.#store.findTokenByHash(hashToken(token));
    const caller = record === undefined ? undefined : { name: record.name };
    const valid = caller === undefined ? undefined : ({ valid: true, caller } as const);
    const use = record === undefined ? undefined : this.#uses.slot(record.id);
    const remembered = { record, caller, valid, use, refreshAt: now + this.#ttlMs / 2 };
    if (this.#ttlMs > 0) this.#remembered.set(token, remembered, now + this.#ttlMs);
    return remembered;
  }

  async start(): Promise<void> {}
}

function verdict({ record, valid }: Remembered, now: number): Verification {
  if (record === undefined || valid === undefined) return { valid: false, reason: 'unknown' };
  // A rotated token's revocation lies ahead until its grace ends.
  if (record.revokedAt !== null && record.revokedAt.getTime() <= now) return { valid: false, reason: 'revoked' };
  if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return { valid: false, reason: 'expired' };
  return valid;
}
