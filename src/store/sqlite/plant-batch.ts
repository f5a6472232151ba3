import type Database from 'better-sqlite3';
import type { NewPlant } from '../../plants/plant.js';
import { CREATED, type CreatePlantResult, outcomeAgainst, plantFromRow } from '../store.js';

export interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

export function toNewPlant(row: PlantRow): NewPlant {
  return plantFromRow(row.id, row.name, row.tag);
}

/**
 * The write of a batch of plants on one connection: one IMMEDIATE
 * transaction, so one commit and one fsync for the whole batch. The plants
 * are inserted one after the other, so the first plant of each id inserts it
 * unless the id is taken, a later one finds it held, and each outcome is the
 * one of creating the plants in turn. The plants created get their webhook
 * messages in the same transaction (the outbox): one webhook_batches row per
 * active subscription, holding the ids of every plant the batch created, so a
 * subscription costs a batch one row rather than a plant one. `onMessages` is
 * told after the commit. A batch that is restored (`restore`) is the same
 * transaction without the outbox.
 */
export class SqlitePlantBatch {
  readonly #statements;
  readonly #transaction: Database.Transaction<(plants: readonly NewPlant[], announce: boolean) => CreatePlantResult[]>;
  readonly #onMessages: () => void;
  #wroteMessages = false;

  constructor(db: Database.Database, onMessages: () => void) {
    this.#statements = {
      insert: db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING'),
      find: db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true),
      // One read of a small table a batch; without subscriptions that is all the outbox costs.
      subscriptions: db.prepare('SELECT id FROM webhook_subscriptions WHERE removed_at IS NULL').pluck(),
      insertMessages: db.prepare('INSERT INTO webhook_batches (subscription_id, created_at, plants, plant_ids) VALUES (?, ?, ?, ?)'),
    };
    this.#transaction = db.transaction((plants: readonly NewPlant[], announce: boolean) => this.#insert(plants, announce));
    this.#onMessages = onMessages;
  }

  write(plants: readonly NewPlant[]): CreatePlantResult[] {
    const results = this.#transaction.immediate(plants, true);
    if (this.#wroteMessages) this.#onMessages();
    return results;
  }

  /** The plants with the same outcomes as `write`'s, and no webhook message. */
  restore(plants: readonly NewPlant[]): CreatePlantResult[] {
    return this.#transaction.immediate(plants, false);
  }

  #insert(plants: readonly NewPlant[], announce: boolean): CreatePlantResult[] {
    const now = Date.now();
    const created: bigint[] = [];
    const results = plants.map((plant): CreatePlantResult => {
      if (this.#statements.insert.run(plant.id, plant.name, plant.tag ?? null, now).changes === 1) {
        created.push(plant.id);
        return CREATED;
      }
      return outcomeAgainst(toNewPlant(this.#statements.find.get(plant.id) as PlantRow), plant);
    });
    const subscribers = created.length === 0 || !announce ? [] : (this.#statements.subscriptions.all() as number[]);
    if (subscribers.length > 0) {
      const ids = encodePlantIds(created);
      for (const subscriptionId of subscribers) this.#statements.insertMessages.run(subscriptionId, now, created.length, ids);
    }
    this.#wroteMessages = subscribers.length > 0;
    return results;
  }
}

/** The ids of a webhook_batches row: 8 bytes each, little-endian, in the order the plants were created. */
export function encodePlantIds(ids: readonly bigint[]): Buffer {
  const bytes = Buffer.allocUnsafe(8 * ids.length);
  ids.forEach((id, index) => bytes.writeBigInt64LE(id, 8 * index));
  return bytes;
}

export function decodePlantIds(bytes: Uint8Array): bigint[] {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: view.length / 8 }, (_, index) => view.readBigInt64LE(8 * index));
}
