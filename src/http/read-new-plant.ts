import { parseExactJson } from '../contract/exact-json.js';
import { validateNewPlant } from '../contract/plant-codecs.js';
import type { NewPlant } from '../plants/plant.js';
import { invalidPlant } from './error-answer.js';

/**
 * POST /plants' body, from its text to the plant it asks for: the exact
 * parse, then validation against the contract's NewPlant. Throws what the
 * route answers: a SyntaxError (or RangeError) for text that is not JSON,
 * which `toServiceError` makes INVALID_JSON, and INVALID_PLANT naming the
 * first field at fault. The create pipeline and `plantstore plants import`
 * both read plants with it, so that a line the import refuses is a body the
 * API refuses, with the same message.
 */
export function readNewPlant(text: string): NewPlant {
  const plant = parseExactJson(text);
  if (!validateNewPlant(plant)) throw invalidPlant(validateNewPlant.errors!);
  return plant as NewPlant;
}
