import type { BaseLogger } from 'pino';
import type { Store } from '../store/store.js';
import type { TokenUses } from './token-uses.js';

/** `token list` shows a use within about this long, for one small write this often, none when no token was used. */
export const TOKEN_USE_WRITE_INTERVAL_MS = 5000;

/** Requests never wait for the write; a failed one is logged and its uses go with the next. */
export class TokenUseWriter {
  readonly #store: Pick<Store, 'recordTokenUses'>;
  readonly #uses: TokenUses;
  readonly #log: Pick<BaseLogger, 'warn'>;
  #timer: NodeJS.Timeout | undefined;
  /** So that two writes never overlap. */
  #writing: Promise<void> | undefined;

  constructor(store: Pick<Store, 'recordTokenUses'>, uses: TokenUses, log: Pick<BaseLogger, 'warn'>) {
    this.#store = store;
    this.#uses = uses;
    this.#log = log;
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.write(), TOKEN_USE_WRITE_INTERVAL_MS).unref();
  }

  /** Stops the timer and writes what is left; the store must still be open. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#writing;
    await this.write();
  }

  /** Never rejects. */
  write(): Promise<void> {
    if (this.#writing !== undefined) return this.#writing;
    const uses = this.#uses.unwritten();
    if (uses.length === 0) return Promise.resolve();
    this.#writing = this.#store
      .recordTokenUses(uses)
      .then(
        () => this.#uses.markWritten(uses),
        (error: unknown) => this.#log.warn({ err: error, tokens: uses.length }, 'the last uses of tokens could not be written; trying again later'),
      )
      .finally(() => (this.#writing = undefined));
    return this.#writing;
  }
}
