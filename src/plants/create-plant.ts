import { ServiceError } from '../errors.js';
import type { GroupCommit } from './group-commit.js';
import { type NewPlant, type Plant, toPlant } from './plant.js';

/**
 * Creates a plant, with the client's id as the idempotency key: the same
 * plant posted again is answered as if created (a safe retry), a different
 * plant under a taken id is a conflict and changes nothing.
 */
export async function createPlant(writer: GroupCommit, plant: NewPlant): Promise<{ plant: Plant; outcome: 'created' | 'replayed' }> {
  checkStorableText('name', plant.name);
  if (plant.tag !== undefined) checkStorableText('tag', plant.tag);
  const result = await writer.create(plant);
  if (result.outcome === 'conflict') {
    throw new ServiceError('PLANT_CONFLICT', { detail: `id ${plant.id} is taken by another plant` });
  }
  return { plant: toPlant(plant), outcome: result.outcome };
}

/**
 * Every store keeps text as UTF-8, which cannot hold a lone UTF-16 surrogate,
 * and PostgreSQL's text cannot hold U+0000. Such a string would come back
 * changed, and a retry of it would then conflict with itself, so it is
 * refused up front.
 */
function checkStorableText(field: string, value: string): void {
  if (!value.isWellFormed()) {
    throw new ServiceError('INVALID_PLANT', { detail: `${field} must be valid Unicode text (it holds a lone surrogate)` });
  }
  if (value.includes('\u0000')) {
    throw new ServiceError('INVALID_PLANT', { detail: `${field} must not contain the NUL character (U+0000)` });
  }
}
