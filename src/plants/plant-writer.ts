import type { SpanContext } from '@opentelemetry/api';
import type { NewPlant } from './plant.js';

/** One plant's outcome, as if the batch's plants were created one after the other; `replayed` may match one earlier in it. */
export type CreatePlantResult = { outcome: 'created' } | { outcome: 'replayed' } | { outcome: 'conflict'; existing: NewPlant };

export const CREATED: CreatePlantResult = Object.freeze({ outcome: 'created' });

/** Called once with the plant's outcome, or with the error that failed its transaction. */
export type CreateCallback = (error: unknown, result?: CreatePlantResult) => void;

/** `done` is called once, never before `add` returns: a callback, so a request costs no promise between its commit and answer. */
export interface CommitQueue {
  /** `trace`: the request's span, which the commit links to and the plant's webhook messages continue. */
  add(plant: NewPlant, done: CreateCallback, trace?: SpanContext): void;
}

/** What the group commit needs of a store; the Store interface extends it. */
export interface PlantBatchWriter {
  /** `createPlants` transactions that may run at once: 1 for a single-writer database. */
  readonly writeConcurrency: number;

  /**
   * Stores each plant whose id is free, in order, in one transaction, resolving only once it is durably committed;
   * two calls, from any process, never both create one id. Each plant `created` gets one webhook message per active
   * subscription in the same transaction. `traceParents` is aligned with `plants`: each created plant's W3C
   * `traceparent` stays with its messages (`ClaimedMessage.traceParent`), an invalid one as none.
   */
  createPlants(plants: readonly NewPlant[], traceParents?: readonly (string | undefined)[]): Promise<CreatePlantResult[]>;
}
