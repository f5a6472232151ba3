import type { TokenUse } from '../store/store.js';

export interface UseSlot {
  /** The latest use, in epoch milliseconds; 0 before the first. */
  at: number;
  written: number;
}

/**
 * Noting a use costs a request one property write. One slot per token record a lookup found, so the store's tokens
 * bound them, not what clients present.
 */
export class TokenUses {
  readonly #slots = new Map<number, UseSlot>();

  slot(id: number): UseSlot {
    let slot = this.#slots.get(id);
    if (slot === undefined) {
      slot = { at: 0, written: 0 };
      this.#slots.set(id, slot);
    }
    return slot;
  }

  unwritten(): TokenUse[] {
    const uses: TokenUse[] = [];
    for (const [id, slot] of this.#slots) if (slot.at > slot.written) uses.push({ id, at: new Date(slot.at) });
    return uses;
  }

  /** Marks these uses as written; a later use of the same token stays to be written. */
  markWritten(uses: readonly TokenUse[]): void {
    for (const use of uses) {
      const slot = this.#slots.get(use.id);
      if (slot !== undefined) slot.written = Math.max(slot.written, use.at.getTime());
    }
  }
}
