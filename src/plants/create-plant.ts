import type { SpanContext } from '@opentelemetry/api';
import { ServiceError } from '../errors.js';
import { type NewPlant, type Plant, toPlant } from './plant.js';
import type { CommitQueue } from './plant-writer.js';

/** What creating a plant answers: the plant as stored, and whether it was new. */
export type Created = { plant: Plant; outcome: 'created' | 'replayed' };

/**
 * Creates a plant, with the client's id as the idempotency key: the same
 * plant posted again is answered as if created (a safe retry), a different
 * plant under a taken id is a conflict and changes nothing.
 *
 * A plant that no store can keep is refused by a throw, before anything is
 * queued; every other outcome comes to `done`, once its transaction is over
 * (a conflict as a PLANT_CONFLICT error). A callback rather than a promise:
 * see CommitQueue.
 */
export function createPlant(queue: CommitQueue, plant: NewPlant, done: (error: unknown, created?: Created) => void, trace?: SpanContext): void {
  checkStorablePlant(plant);
  queue.add(
    plant,
    (error, result) => {
      if (error !== undefined) done(error);
      else if (result!.outcome === 'conflict') done(plantConflict(plant.id));
      else done(undefined, { plant: toPlant(plant), outcome: result!.outcome });
    },
    trace,
  );
}

/** The error of a plant whose id another plant holds. */
export function plantConflict(id: bigint): ServiceError {
  return new ServiceError('PLANT_CONFLICT', { detail: `id ${id} is taken by another plant` });
}

/**
 * Every store keeps text as UTF-8, which cannot hold a lone UTF-16 surrogate,
 * and PostgreSQL's text cannot hold U+0000. Such a string would come back
 * changed, and a retry of it would then conflict with itself, so it is
 * refused up front: throws INVALID_PLANT.
 */
export function checkStorablePlant(plant: NewPlant): void {
  checkStorableText('name', plant.name);
  if (plant.tag !== undefined) checkStorableText('tag', plant.tag);
}

function checkStorableText(field: string, value: string): void {
  if (!value.isWellFormed()) {
    throw new ServiceError('INVALID_PLANT', { detail: `${field} must be valid Unicode text (it holds a lone surrogate)` });
  }
  if (value.includes('\u0000')) {
    throw new ServiceError('INVALID_PLANT', { detail: `${field} must not contain the NUL character (U+0000)` });
  }
}
