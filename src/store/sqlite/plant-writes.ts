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
 * Each plant created now gets one webhook message per active subscription in
 * the same transaction (the outbox); `onMessages` is told after the commit.
 */
export function plantWriter(db: Database.Database, onMessages: () => void): (plants: readonly NewPlant[]) => CreatePlantResult[] {
  const insert = db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const find = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true);
  // One read of a small table a batch; without subscriptions that is all the outbox costs.
  const subscriptions = db.prepare('SELECT id FROM webhook_subscriptions WHERE removed_at IS NULL').pluck();
  const insertMessage = db.prepare('INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at) VALUES (?, ?, ?, ?)');
  let wroteMessages = false;
  const write = db.transaction((plants: readonly NewPlant[]) => {
    const now = Date.now();
    const subscribers = subscriptions.all() as number[];
    wroteMessages = false;
    return plants.map((plant): CreatePlantResult => {
      if (insert.run(plant.id, plant.name, plant.tag ?? null, now).changes === 1) {
        for (const subscriptionId of subscribers) insertMessage.run(subscriptionId, plant.id, now, now);
        wroteMessages ||= subscribers.length > 0;
        return { outcome: 'created' };
      }
      // Plants are never changed or deleted, so the row that holds the id is the one to compare with.
      const existing = toNewPlant(find.get(plant.id) as PlantRow);
      return samePlant(existing, plant) ? { outcome: 'replayed' } : { outcome: 'conflict', existing };
    });
  });
  return (plants) => {
    const results = write.immediate(plants);
    if (wroteMessages) onMessages();
    return results;
  };
}
