import type { BaseLogger } from 'pino';
import type { Store } from '../store/store.js';
import type { TokenUses } from './token-uses.js';

/**
 * How often the uses noted in memory are written: `token list` shows a use
 * within about this long, at the cost of one small write this often, and
 * none when no token was used.
 */
export const TOKEN_USE_WRITE_INTERVAL_MS = 5000;

/**
 * Writes the tokens' last uses that a server noted (TokenUses) to the store,
 * all in one write every TOKEN_USE_WRITE_INTERVAL_MS, and once more when the
 * server stops, so that requests never wait for it. A failed write is
 * logged and its uses are tried again with the next.
 */
export class TokenUseWriter {
  readonly #store: Pick<Store, 'recordTokenUses'>;
  readonly #uses: TokenUses;
  readonly #log: Pick<BaseLogger, 'warn'>;
  #timer: NodeJS.Timeout | undefined;
  /** The write under way, so that two never overlap. */
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

  /** Writes the uses noted since the last write, if any; never rejects. */
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
