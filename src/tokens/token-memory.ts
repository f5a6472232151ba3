/**
 * What was decided about presented tokens, each remembered until a time, so
 * that a client reusing its token costs one map lookup. Keyed by the token
 * itself; at most `MAX_ENTRIES` are kept, and a flood of distinct tokens
 * empties the memory rather than growing it (forgetting only costs a check).
 */
export class TokenMemory<T> {
  static readonly MAX_ENTRIES = 10_000;
  readonly #entries = new Map<string, { readonly value: T; readonly until: number }>();

  /** The value remembered for this token, unless there is none or its time has come. */
  get(token: string, now: number): T | undefined {
    const entry = this.#entries.get(token);
    return entry === undefined || now >= entry.until ? undefined : entry.value;
  }

  /** Remembers `value` for this token until `until` (epoch milliseconds). */
  set(token: string, value: T, until: number): void {
    if (this.#entries.size >= TokenMemory.MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(token, { value, until });
  }
}
