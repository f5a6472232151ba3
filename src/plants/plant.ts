import type { components } from '../contract/generated/openapi.js';

type Schemas = components['schemas'];

/** A plant as the client sees it: the contract's Plant schema. */
export type Plant = Schemas['Plant'];

/**
 * A plant as the client creates it: the contract's NewPlant schema, except
 * that the id is a bigint. It is a signed 64-bit integer, and a JavaScript
 * number cannot hold every one exactly.
 */
export type NewPlant = Omit<Schemas['NewPlant'], 'id'> & { id: bigint };

/** Two plants with one id are the same plant when name and tag are equal. */
export function samePlant(a: Plant, b: Plant): boolean {
  return a.name === b.name && a.tag === b.tag;
}

/** The Plant part of a NewPlant, with `tag` left out when there is none. */
export function toPlant(plant: NewPlant): Plant {
  return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}

/** One JSON object, with the id written exactly (JSON.stringify cannot write a bigint). */
export function newPlantToJson(plant: NewPlant): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
}
