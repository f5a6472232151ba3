/** `maxBytes` counts the keys' characters and ENTRY_BYTES for each entry. */
export interface MemoryLimits {
  readonly maxEntries: number;
  readonly maxBytes: number;
}

export const ENTRY_BYTES = 256;

interface Entry<T> {
  readonly value: T;
  readonly until: number;
  readonly bytes: number;
  used: boolean;
}

/**
 * When full, the oldest entry goes unless read since it was set: then it is spared once and moved to the end (a
 * clock's second chance), so that a token in use outlives a stream of new ones for one flag written a hit.
 */
export class TokenMemory<T> {
  readonly #limits: MemoryLimits;
  // A Map keeps the order entries were set in: the first is the oldest.
  readonly #entries = new Map<string, Entry<T>>();
  #bytes = 0;

  constructor(limits: MemoryLimits) {
    this.#limits = limits;
  }

  get(key: string, now: number): T | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || now >= entry.until) return undefined;
    entry.used = true;
    return entry.value;
  }

  set(key: string, value: T, until: number): void {
    const bytes = key.length + ENTRY_BYTES;
    this.delete(key);
    if (bytes > this.#limits.maxBytes || this.#limits.maxEntries < 1) return;
    while (this.#entries.size >= this.#limits.maxEntries || this.#bytes + bytes > this.#limits.maxBytes) this.#evictOldest();
    this.#entries.set(key, { value, until, bytes, used: false });
    this.#bytes += bytes;
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }

  #evictOldest(): void {
    // An entry spared is set again, at the end, where this loop meets it once more unread.
    for (const [key, entry] of this.#entries) {
      this.#entries.delete(key);
      if (!entry.used) {
        this.#bytes -= entry.bytes;
        return;
      }
      entry.used = false;
      this.#entries.set(key, entry);
    }
  }
}
