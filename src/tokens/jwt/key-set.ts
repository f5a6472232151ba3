import { createLocalJWKSet, type CryptoKey, errors, type JWTVerifyGetKey } from 'jose';
import type { BaseLogger } from 'pino';
import { FETCH_TIMEOUT_MS, IssuerMismatchError, type KeySetSource } from './key-set-source.js';

/** The issuer's keys cannot be had for a token that needs them: the token may be fine, so the client should retry. */
export class KeySetUnavailableError extends Error {
  override name = 'KeySetUnavailableError';
  constructor(
    message: string,
    /** When a fetch may next be tried, in whole seconds from now (at least 1). */
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
  /** Why it failed; undefined when it succeeded. */
  readonly error: Error | undefined;
}

type Log = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

/** The keys a JWT is checked with, as the verifier sees them. */
export interface VerificationKeys {
  /** jose's key lookup for `jwtVerify`; throws KeySetUnavailableError when the key cannot be known now. */
  readonly key: JWTVerifyGetKey<CryptoKey>;
  /** Until when a key of the set now remembered may be trusted without fetching again, in epoch milliseconds. */
  trustedUntil(): number;
  /** Fetches the keys before the server takes requests. */
  start(): Promise<void>;
}

/**
 * The issuer's public keys, fetched from a source and remembered. jose's own
 * remote key set is not used because it forgets a failed fetch: while the
 * issuer is down, every token with an unknown `kid` would fetch again.
 *
 * The rules:
 * - A token whose key is not in the remembered set triggers one fetch, and
 *   at most one fetch is started per `cooldownMs`, whether the last one
 *   succeeded or failed; tokens arriving while a fetch is under way wait for
 *   it instead of starting their own. So a storm of made-up `kid`s costs the
 *   issuer at most one request per cooldown.
 * - A token waits for one fetch at most, and a fetch takes FETCH_TIMEOUT_MS
 *   at most, discovery included: a slow provider delays a request by that
 *   much, not by a fetch for the age of the set and another for its `kid`.
 * - A set older than `maxAgeMs` is fetched again before it is used, so that
 *   a key removed from the issuer's set stops being accepted within that age.
 * - When a fetch fails, the keys already remembered keep working; a token
 *   whose key is not among them cannot be checked (KeySetUnavailableError).
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

  /** Fetches the set now, as a server does before it takes requests; a failure is logged, and thrown only when the issuer is misnamed. */
  async start(): Promise<void> {
    await this.#refresh();
    if (this.#lastAttempt?.error instanceof IssuerMismatchError) throw this.#lastAttempt.error;
  }

  trustedUntil(): number {
    return this.#fetched === undefined ? 0 : this.#fetched.fetchedAt + this.#maxAgeMs;
  }

  /** The key for this header, fetching the set when the rules above allow. */
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
    // Not among the remembered keys: perhaps the issuer rotated them (unless a fetch replaced the set meanwhile,
    // or this token already waited for one: a second wait would double the time a slow provider costs it).
    if (used === this.#fetched && !waited) await this.#refreshWhenAllowed();
    // The newest fetch failed: the key may well be in the set that could not be had.
    if (this.#lastAttempt?.error !== undefined) throw this.#unavailable();
    return this.#fetched!.resolve(header, token);
  };

  /** Fetches the set unless the cooldown forbids it, or waits for the fetch under way; resolves whether it waited for one. */
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
      // One deadline for the whole fetch, however many documents the source reads for it.
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
