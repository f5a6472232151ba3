import { parseExactJson } from '../contract/exact-json.js';
import { validateNewPlant } from '../contract/plant-codecs.js';
import type { NewPlant } from '../plants/plant.js';
import { invalidPlant } from './error-answer.js';

/**
 * Throws a SyntaxError or RangeError (INVALID_JSON, by `toServiceError`) or INVALID_PLANT. `plantstore plants import`
 * reads plants with it too, so the import and the API refuse alike, with the same message.
 */
export function readNewPlant(text: string): NewPlant {
  const plant = parseExactJson(text);
  if (!validateNewPlant(plant)) throw invalidPlant(validateNewPlant.errors!);
  return plant as NewPlant;
}
