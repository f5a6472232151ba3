import { createLocalJWKSet, type CryptoKey, errors, type JWTVerifyGetKey } from 'jose';
import type { BaseLogger } from 'pino';
import { FETCH_TIMEOUT_MS, IssuerMismatchError, type KeySetSource } from './key-set-source.js';

/** The token may be fine, so the client should retry. */
export class KeySetUnavailableError extends Error {
  override name = 'KeySetUnavailableError';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

interface Fetched {
  readonly resolve: ReturnType<typeof createLocalJWKSet>;
  readonly fetchedAt: number;
}

interface Attempt {
  readonly at: number;
  readonly error: Error | undefined;
}

type Log = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

export interface VerificationKeys {
  /** Throws KeySetUnavailableError when the issuer's keys cannot be had. */
  readonly key: JWTVerifyGetKey<CryptoKey>;
  /** Until when the remembered keys may be trusted without fetching again. */
  trustedUntil(): number;
  start(): Promise<void>;
}

/**
 * jose's remote key set forgets a failed fetch, so while the issuer is down every unknown `kid` would fetch again. Here
 * at most one fetch starts per `cooldownMs`, failed or not, and tokens wait for the one under way: a storm of made-up
 * `kid`s costs the issuer one request per cooldown. A token waits for one fetch at most; a set older than `maxAgeMs` is
 * fetched again before use, so a removed key stops being accepted; after a failed fetch the remembered keys work on.
 */
export class KeySet implements VerificationKeys {
  readonly #source: KeySetSource;
  readonly #cooldownMs: number;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  readonly #log: Log;
  #fetched: Fetched | undefined;
  #lastAttempt: Attempt | undefined;
  #inFlight: Promise<void> | undefined;

  constructor(source: KeySetSource, options: { cooldownMs: number; maxAgeMs: number; log: Log; now?: () => number }) {
    this.#source = source;
    this.#cooldownMs = options.cooldownMs;
    this.#maxAgeMs = options.maxAgeMs;
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
  }

  /** A failure is logged, and thrown only when the issuer is misnamed. */
  async start(): Promise<void> {
    await this.#refresh();
    if (this.#lastAttempt?.error instanceof IssuerMismatchError) throw this.#lastAttempt.error;
  }

  trustedUntil(): number {
    return this.#fetched === undefined ? 0 : this.#fetched.fetchedAt + this.#maxAgeMs;
  }

  readonly key: JWTVerifyGetKey<CryptoKey> = async (header, token) => {
    let waited = false;
    if (this.#fetched === undefined || this.#now() - this.#fetched.fetchedAt >= this.#maxAgeMs) waited = await this.#refreshWhenAllowed();
    const used = this.#fetched;
    if (used === undefined) throw this.#unavailable();
    try {
      return await used.resolve(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
    }
    // Perhaps the issuer rotated its keys; not after a wait already: a second would double what a slow provider costs.
    if (used === this.#fetched && !waited) await this.#refreshWhenAllowed();
    // The newest fetch failed: the key may well be in the set that could not be had.
    if (this.#lastAttempt?.error !== undefined) throw this.#unavailable();
    return this.#fetched!.resolve(header, token);
  };

  /** Resolves whether it waited for a fetch. */
  async #refreshWhenAllowed(): Promise<boolean> {
    if (this.#inFlight === undefined && this.#lastAttempt !== undefined && this.#now() - this.#lastAttempt.at < this.#cooldownMs) return false;
    await this.#refresh();
    return true;
  }

  #refresh(): Promise<void> {
    this.#inFlight ??= this.#fetch().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  async #fetch(): Promise<void> {
    const at = this.#now();
    try {
      const document = await this.#source.load(AbortSignal.timeout(FETCH_TIMEOUT_MS));
      this.#fetched = { resolve: createLocalJWKSet(document), fetchedAt: this.#now() };
      this.#lastAttempt = { at, error: undefined };
      this.#log.info({ keySet: this.#source.location, keys: document.keys.length }, 'identity provider keys fetched');
    } catch (caught) {
      // Whatever went wrong counts as a failed fetch, so that the cooldown holds for it too.
      const error = caught instanceof Error ? caught : new Error(String(caught));
      this.#lastAttempt = { at, error };
      const log = error instanceof IssuerMismatchError ? this.#log.error.bind(this.#log) : this.#log.warn.bind(this.#log);
      log(
        { keySet: this.#source.location, problem: error.message, keptKeys: this.#fetched !== undefined, retryInMs: this.#cooldownMs },
        'cannot fetch the identity provider keys',
      );
    }
  }

  #unavailable(): KeySetUnavailableError {
    const last = this.#lastAttempt;
    const waitMs = last === undefined ? this.#cooldownMs : last.at + this.#cooldownMs - this.#now();
    return new KeySetUnavailableError(
      `the identity provider's keys could not be fetched: ${last?.error?.message ?? 'not fetched yet'}`,
      Math.max(1, Math.ceil(waitMs / 1000)),
    );
  }
}
