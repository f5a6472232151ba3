/**
 * Progress of a long command on stderr: a bar redrawn in place on a terminal,
 * and otherwise plain lines, at most one a second, that a log keeps readably.
 */
export class Progress {
  readonly #out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly #label: string;
  readonly #total: bigint;
  #lastLine = 0;
  /** What the last plain line said, so that the final one is not written twice. */
  #lastDone: bigint | undefined;

  constructor(out: NodeJS.WritableStream, label: string, total: bigint) {
    this.#out = out;
    this.#label = label;
    this.#total = total;
  }

  update(done: bigint, final = false): void {
    const percent = this.#total === 0n ? 100 : Number((done * 100n) / this.#total);
    if (this.#out.isTTY) {
      const width = 30;
      const filled = Math.min(width, Math.round((percent / 100) * width));
      this.#out.write(`\r${this.#label} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${percent}% ${done}/${this.#total}${final ? '\n' : ''}`);
      return;
    }
    const now = Date.now();
    if (final ? done === this.#lastDone : now - this.#lastLine < 1000) return;
    this.#lastLine = now;
    this.#lastDone = done;
    this.#out.write(`${this.#label}: ${done}/${this.#total} (${percent}%)\n`);
  }
}
