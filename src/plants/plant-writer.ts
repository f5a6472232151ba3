import type { SpanContext } from '@opentelemetry/api';
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
export interface CommitQueue {
  /** `trace`: the request's span, when traces are on, which the commit links to and the plant's webhook messages continue. */
  add(plant: NewPlant, done: CreateCallback, trace?: SpanContext): void;
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
   *
   * `traceParents`, when given, is aligned with `plants`: the W3C
   * `traceparent` of the request of each (undefined for none). Each plant
   * created keeps its own with its messages, so that their deliveries
   * continue its trace (`ClaimedMessage.traceParent`); one that is not a
   * valid traceparent is kept as none. Absent when traces are off, and then
   * the batch costs nothing more than without traces.
   */
  createPlants(plants: readonly NewPlant[], traceParents?: readonly (string | undefined)[]): Promise<CreatePlantResult[]>;
}
