/** For an event an attacker can repeat at will (a refused connection): a flood of it cannot flood the log, and a metric counts every one. */
export class LogThrottle {
  readonly #intervalMs: number;
  readonly #now: () => number;
  #nextLineAt = Number.NEGATIVE_INFINITY;
  #unlogged = 0;

  constructor(intervalMs: number, now: () => number = Date.now) {
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** For one event: undefined when it goes unlogged, else how many went unlogged since the last line. */
  take(): number | undefined {
    const now = this.#now();
    if (now < this.#nextLineAt) {
      this.#unlogged += 1;
      return undefined;
    }
    this.#nextLineAt = now + this.#intervalMs;
    const unlogged = this.#unlogged;
    this.#unlogged = 0;
    return unlogged;
  }
}
