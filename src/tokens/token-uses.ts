import type { TokenUse } from '../store/store.js';

/** Where the verifier notes a token's latest use: one per token record, shared by every lookup of it. */
export interface UseSlot {
  /** The latest use, in epoch milliseconds; 0 before the first. */
  at: number;
  /** The latest use written to the store. */
  written: number;
}

/**
 * The latest use of each store token this process has accepted, kept in
 * memory so that noting a use costs a request one property write; a
 * TokenUseWriter moves them to the store every few seconds. One slot per
 * token record that a lookup found, so their number is bounded by the
 * store's tokens, not by what clients present.
 */
export class TokenUses {
  readonly #slots = new Map<number, UseSlot>();

  /** The slot of the token with this id, made at its first lookup. */
  slot(id: number): UseSlot {
    let slot = this.#slots.get(id);
    if (slot === undefined) {
      slot = { at: 0, written: 0 };
      this.#slots.set(id, slot);
    }
    return slot;
  }

  /** The uses noted since they were last written, each token's latest. */
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
