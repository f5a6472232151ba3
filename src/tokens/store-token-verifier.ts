import { parseRatePolicy } from '../rate-limits/rate-policy.js';
import type { Store, TokenRecord } from '../store/store.js';
import { hashToken, hasTokenShape } from './api-token.js';
import { type MemoryLimits, TokenMemory } from './token-memory.js';
import { TokenUses, type UseSlot } from './token-uses.js';
import type { TokenVerifier, Verification } from './token-verifier.js';

interface Remembered {
  record: TokenRecord;
  /** Made once per lookup: a remembered valid token allocates nothing. */
  valid: Verification;
  use: UseSlot;
  refreshAt: number;
}

const UNKNOWN: Verification = Object.freeze({ valid: false, reason: 'unknown' });

/** `found` and `unknown`: a request waited for the lookup; `refresh`: a token in use was looked up in the background. */
export type LookupOutcome = 'found' | 'unknown' | 'refresh';

export const KNOWN_TOKENS: MemoryLimits = { maxEntries: 10_000, maxBytes: 16 * 1024 * 1024 };
export const UNKNOWN_TOKENS: MemoryLimits = { maxEntries: 10_000, maxBytes: 4 * 1024 * 1024 };

/**
 * Each answer is remembered for at most `ttlMs`, which bounds how long a token revoked elsewhere still passes; expiry
 * and a rotation's grace are checked on every request against the remembered record. A valid token in use past half
 * its memory is looked up again in the background, so a busy client never waits for the store.
 * Anyone can present tokens: one not of `hasTokenShape` is refused unhashed; unknown ones are remembered apart, by
 * hash, so a flood of them never evicts a token in use; known ones are keyed by the token, cheaper than hashing it.
 */
export class StoreTokenVerifier implements TokenVerifier {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #known = new TokenMemory<Remembered>(KNOWN_TOKENS);
  readonly #unknown = new TokenMemory<true>(UNKNOWN_TOKENS);
  /** By hash: concurrent lookups of one token are one. */
  readonly #lookups = new Map<string, Promise<Remembered | undefined>>();
  readonly #uses: TokenUses;
  readonly #onLookup: ((outcome: LookupOutcome) => void) | undefined;

  constructor(store: Store, options: { ttlMs: number; now?: () => number; uses?: TokenUses; onLookup?: (outcome: LookupOutcome) => void }) {
    this.#store = store;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
    this.#uses = options.uses ?? new TokenUses();
    this.#onLookup = options.onLookup;
  }

  verifyRemembered(token: string): Verification | undefined {
    const now = this.#now();
    const remembered = this.#known.get(token, now);
    if (remembered === undefined) return undefined;
    const known = verdict(remembered, now);
    if (known.valid) {
      remembered.use.at = now;
      // A failed refresh leaves the memory to lapse; the first request after that looks the token up itself.
      if (now >= remembered.refreshAt) this.#lookUp(token, hashToken(token), true).catch(() => undefined);
    }
    return known;
  }

  async verify(token: string): Promise<Verification> {
    const known = this.verifyRemembered(token);
    if (known !== undefined) return known;
    if (!hasTokenShape(token)) return UNKNOWN;
    const hash = hashToken(token);
    if (this.#unknown.get(hash, this.#now()) !== undefined) return UNKNOWN;
    const remembered = await this.#lookUp(token, hash, false);
    if (remembered === undefined) return UNKNOWN;
    const now = this.#now();
    const looked = verdict(remembered, now);
    if (looked.valid) remembered.use.at = now;
    return looked;
  }

  #lookUp(token: string, hash: string, refresh: boolean): Promise<Remembered | undefined> {
    // With no memory (TOKEN_CACHE_TTL_MS=0) every request sees the store as it is when the request comes.
    if (this.#ttlMs === 0) return this.#fetch(token, hash, refresh);
    let lookup = this.#lookups.get(hash);
    if (lookup === undefined) {
      lookup = this.#fetch(token, hash, refresh).finally(() => this.#lookups.delete(hash));
      this.#lookups.set(hash, lookup);
    }
    return lookup;
  }

  async #fetch(token: string, hash: string, refresh: boolean): Promise<Remembered | undefined> {
    const now = this.#now();
    const record = await this.#store.findTokenByHash(hash);
    this.#onLookup?.(refresh ? 'refresh' : record === undefined ? 'unknown' : 'found');
    const until = now + this.#ttlMs;
    if (record === undefined) {
      if (this.#ttlMs > 0) {
        this.#known.delete(token);
        this.#unknown.set(hash, true, until);
      }
      return undefined;
    }
    // A token's own policy, parsed once a lookup; one the store holds but this build cannot read falls back to RATE_LIMIT.
    const rateLimit = record.rateLimit === null ? undefined : parseRatePolicy(record.rateLimit, 'token');
    const valid = { valid: true, caller: rateLimit === undefined ? { name: record.name } : { name: record.name, rateLimit } } as const;
    const remembered = { record, valid, use: this.#uses.slot(record.id), refreshAt: now + this.#ttlMs / 2 };
    if (this.#ttlMs > 0) this.#known.set(token, remembered, until);
    return remembered;
  }

  async start(): Promise<void> {}
}

function verdict({ record, valid }: Remembered, now: number): Verification {
  // A rotated token's revocation lies ahead until its grace ends.
  if (record.revokedAt !== null && record.revokedAt.getTime() <= now) return { valid: false, reason: 'revoked' };
  if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return { valid: false, reason: 'expired' };
  return valid;
}
