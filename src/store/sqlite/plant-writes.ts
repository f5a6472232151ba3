import type Database from 'better-sqlite3';
import { type NewPlant, samePlant } from '../../plants/plant.js';
import type { CreatePlantResult } from '../store.js';

export interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

export function toNewPlant(row: PlantRow): NewPlant {
  return row.tag === null ? { id: row.id, name: row.name } : { id: row.id, name: row.name, tag: row.tag };
}

/**
 * The write of a batch of plants on one connection: one IMMEDIATE
 * transaction, so one commit and one fsync for the whole batch, with the
 * outcome of each plant as if they had been created one after the other.
 */
export function plantWriter(db: Database.Database): (plants: readonly NewPlant[]) => CreatePlantResult[] {
  const insert = db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const find = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true);
  const write = db.transaction((plants: readonly NewPlant[]) => {
    const now = Date.now();
    return plants.map((plant): CreatePlantResult => {
      if (insert.run(plant.id, plant.name, plant.tag ?? null, now).changes === 1) return { outcome: 'created' };
      // Plants are never changed or deleted, so the row that holds the id is the one to compare with.
      const existing = toNewPlant(find.get(plant.id) as PlantRow);
      return samePlant(existing, plant) ? { outcome: 'replayed' } : { outcome: 'conflict', existing };
    });
  });
  return (plants) => write.immediate(plants);
}
