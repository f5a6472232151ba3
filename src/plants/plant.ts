import type { components } from '../contract/generated/openapi.js';

type Schemas = components['schemas'];

export type Plant = Schemas['Plant'];

/** The contract's NewPlant with a bigint id: a JavaScript number cannot hold every signed 64-bit id exactly. */
export type NewPlant = Omit<Schemas['NewPlant'], 'id'> & { id: bigint };

/** Two plants with one id are the same plant when name and tag are equal. */
export function samePlant(a: Plant, b: Plant): boolean {
  return a.name === b.name && a.tag === b.tag;
}

export function toPlant(plant: NewPlant): Plant {
  return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}

/** JSON.stringify cannot write a bigint. */
export function newPlantToJson(plant: NewPlant): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
}
