/** Progress on stderr: a bar redrawn in place on a terminal, else plain lines a log keeps readably; without a total (a pipe), the count alone. */
export class Progress {
  readonly #out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly #label: string;
  readonly #total: bigint | undefined;
  #lastLine = 0;
  /** What the last plain line said, so that the final one is not written twice. */
  #lastDone: bigint | undefined;

  constructor(out: NodeJS.WritableStream, label: string, total: bigint | undefined) {
    this.#out = out;
    this.#label = label;
    this.#total = total;
  }

  update(done: bigint, final = false): void {
    if (this.#total === undefined) {
      this.#write(done, final, `${done}`, `${done}`);
      return;
    }
    const percent = this.#total === 0n ? 100 : Number((done * 100n) / this.#total);
    const width = 30;
    const filled = Math.min(width, Math.round((percent / 100) * width));
    const bar = `[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${percent}% ${done}/${this.#total}`;
    this.#write(done, final, bar, `${done}/${this.#total} (${percent}%)`);
  }

  /** `bar` redrawn on a terminal; elsewhere `line`, unless a line was written less than a second ago or said the same. */
  #write(done: bigint, final: boolean, bar: string, line: string): void {
    if (this.#out.isTTY) {
      this.#out.write(`\r${this.#label} ${bar}${final ? '\n' : ''}`);
      return;
    }
    const now = Date.now();
    if (final ? done === this.#lastDone : now - this.#lastLine < 1000) return;
    this.#lastLine = now;
    this.#lastDone = done;
    this.#out.write(`${this.#label}: ${line}\n`);
  }
}
