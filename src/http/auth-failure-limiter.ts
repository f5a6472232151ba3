import { limitKey } from './limit-key.js';

/**
 * Failed authentications per limit key in fixed windows; valid tokens are never counted or refused. A failure counts
 * once its token is judged, as an unremembered token may be valid; made-up ones are judged cheaply (tokens/store-token-verifier.ts).
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

  /** The seconds to wait once `address` is past its limit; undefined within it. */
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
