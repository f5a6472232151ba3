import { limitKey } from './limit-key.js';

/**
 * Counts failed authentications per client address in fixed windows, an
 * IPv6 client by its /64 (limit-key.ts). Past the limit, an address's
 * failing requests are answered 429 until its window ends; requests with a
 * valid token are never counted or refused.
 *
 * A failure is counted once its token is judged, not before: a token not yet
 * remembered may be valid, and only judging it tells. What an attacker can
 * make up in any number is judged cheaply: a token of no shape the service
 * accepts (too long, too short, another alphabet) is refused before any hash,
 * lookup or memory, and one of the store's shape costs a hash and at most one
 * lookup, remembered apart from the tokens in use (tokens/store-token-verifier.ts).
 */
export class AuthFailureLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #failures = new Map<string, { count: number; windowStart: number }>();
  /** Bounds memory under a flood from many addresses; forgetting early only errs towards letting through. */
  static readonly MAX_ADDRESSES = 100_000;

  constructor(options: { limit: number; windowMs: number; now?: () => number }) {
    this.#limit = options.limit;
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Records one failure of `address`. Resolves the seconds to wait when the
   * address is now past its limit, or undefined while it is within it.
   */
  recordFailure(address: string): number | undefined {
    const key = limitKey(address);
    const now = this.#now();
    let entry = this.#failures.get(key);
    if (entry === undefined || now - entry.windowStart >= this.#windowMs) {
      if (this.#failures.size >= AuthFailureLimiter.MAX_ADDRESSES) this.#failures.clear();
      entry = { count: 0, windowStart: now };
      this.#failures.set(key, entry);
    }
    entry.count += 1;
    if (entry.count <= this.#limit) return undefined;
    return Math.max(1, Math.ceil((entry.windowStart + this.#windowMs - now) / 1000));
  }
}
