import type { NewPlant } from './plant.js';

/**
 * One plant's outcome, as if the plants of a batch were created one after
 * the other:
 * - `created`: the plant was stored now;
 * - `replayed`: the same plant (same name and tag) was already stored,
 *   possibly earlier in the same batch;
 * - `conflict`: another plant holds the id; `existing` is that plant and
 *   nothing was changed for this one.
 */
export type CreatePlantResult = { outcome: 'created' } | { outcome: 'replayed' } | { outcome: 'conflict'; existing: NewPlant };

/** The outcome of every plant created: one object for all, as it holds nothing of its own. */
export const CREATED: CreatePlantResult = Object.freeze({ outcome: 'created' });

/** Called once with the plant's outcome, or with the error that failed its transaction. */
export type CreateCallback = (error: unknown, result?: CreatePlantResult) => void;

/**
 * What creating a plant needs of the write path: the group commit
 * implements it. A callback rather than a promise, so that a request costs
 * one queue entry and no promise (with its closures and microtask turns)
 * between the transaction and its answer. `done` is called once, never
 * before `add` returns.
 */
export interface PlantWriter {
  add(plant: NewPlant, done: CreateCallback): void;
}

/**
 * What the group commit needs of a store: one durable transaction per
 * batch. The Store interface extends it; the domain never sees the rest.
 */
export interface PlantBatchWriter {
  /** How many `createPlants` transactions may run at once: 1 for a single-writer database. */
  readonly writeConcurrency: number;

  /**
   * Stores each plant whose id is free, in order, in one transaction, and
   * resolves one result per plant only once that transaction is durably
   * committed (a crash after this resolves never loses a plant). Two calls,
   * from this process or another, never both create one id. Every plant
   * `created` gets one webhook message per active subscription in the same
   * transaction; a replayed or conflicting one gets none.
   */
  createPlants(plants: readonly NewPlant[]): Promise<CreatePlantResult[]>;
}
