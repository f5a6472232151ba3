import type { SpanContext } from '@opentelemetry/api';
import { ServiceError } from '../errors.js';
import { type NewPlant, type Plant, toPlant } from './plant.js';
import type { CommitQueue } from './plant-writer.js';

export type Created = { plant: Plant; outcome: 'created' | 'replayed' };

/**
 * The client's id is the idempotency key: the same plant again is a safe retry, another plant under it a PLANT_CONFLICT.
 * A plant no store can keep throws before anything is queued; every other outcome comes to `done`.
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

export function plantConflict(id: bigint): ServiceError {
  return new ServiceError('PLANT_CONFLICT', { detail: `id ${id} is taken by another plant` });
}

/** UTF-8 cannot hold a lone surrogate, nor PostgreSQL's text U+0000: such a plant would come back changed, its retry a conflict. */
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
