import type Database from 'better-sqlite3';
import type { NewPlant } from '../../plants/plant.js';
import { CREATED, type CreatePlantResult, isTraceParent, outcomeAgainst, plantFromRow } from '../store.js';

export interface PlantRow {
  id: bigint;
  name: string;
  tag: string | null;
}

export function toNewPlant(row: PlantRow): NewPlant {
  return plantFromRow(row.id, row.name, row.tag);
}

/**
 * A batch of plants in one IMMEDIATE transaction: one commit and one fsync. Plants are inserted in turn, so each outcome is that of
 * creating them one after the other. The outbox is written in the same transaction: one webhook_batches row per active subscription
 * holding the ids (and traceparents) of the plants created, a row a batch rather than a plant. `restore` is the same without the outbox.
 */
export class SqlitePlantBatch {
  readonly #statements;
  readonly #transaction: Database.Transaction<(plants: readonly NewPlant[], announce: boolean, traceParents?: TraceParents) => CreatePlantResult[]>;
  readonly #onMessages: () => void;
  readonly #db: Database.Database;
  #wroteMessages = false;

  constructor(db: Database.Database, onMessages: () => void) {
    this.#db = db;
    this.#statements = {
      noWait: db.prepare('PRAGMA busy_timeout = 0'),
      wait: db.prepare(`PRAGMA busy_timeout = ${db.pragma('busy_timeout', { simple: true }) as number}`),
      insert: db.prepare('INSERT INTO plants (id, name, tag, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING'),
      find: db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true),
      // One read of a small table a batch; without subscriptions that is all the outbox costs.
      subscriptions: db.prepare('SELECT id FROM webhook_subscriptions WHERE removed_at IS NULL').pluck(),
      insertMessages: db.prepare('INSERT INTO webhook_batches (subscription_id, created_at, plants, plant_ids, trace_parents) VALUES (?, ?, ?, ?, ?)'),
    };
    this.#transaction = db.transaction((plants: readonly NewPlant[], announce: boolean, traceParents?: TraceParents) =>
      this.#insert(plants, announce, traceParents),
    );
    this.#onMessages = onMessages;
  }

  /**
   * Writes the batch, or returns undefined at once when another connection holds the write lock (a deliverer's claim, another
   * worker's batch): SQLite's own wait would put the thread to sleep for a millisecond or more, and every request with it.
   */
  tryWrite(plants: readonly NewPlant[], traceParents?: TraceParents): CreatePlantResult[] | undefined {
    this.#statements.noWait.get();
    let results: CreatePlantResult[];
    try {
      results = this.#transaction.immediate(plants, true, traceParents);
    } catch (error) {
      // BUSY at BEGIN: nothing was written.
      if ((error as { code?: unknown }).code === 'SQLITE_BUSY' && !this.#db.inTransaction) return undefined;
      throw error;
    } finally {
      this.#statements.wait.get();
    }
    if (this.#wroteMessages) this.#onMessages();
    return results;
  }

  restore(plants: readonly NewPlant[]): CreatePlantResult[] {
    return this.#transaction.immediate(plants, false);
  }

  #insert(plants: readonly NewPlant[], announce: boolean, traceParents: TraceParents | undefined): CreatePlantResult[] {
    const now = Date.now();
    const created: bigint[] = [];
    // The traceparents of the plants created, aligned with `created`: only for a batch that came with some.
    const createdTraces: (string | undefined)[] | undefined = traceParents && [];
    const results = plants.map((plant, position): CreatePlantResult => {
      if (this.#statements.insert.run(plant.id, plant.name, plant.tag ?? null, now).changes === 1) {
        created.push(plant.id);
        createdTraces?.push(traceParents![position]);
        return CREATED;
      }
      return outcomeAgainst(toNewPlant(this.#statements.find.get(plant.id) as PlantRow), plant);
    });
    const subscribers = created.length === 0 || !announce ? [] : (this.#statements.subscriptions.all() as number[]);
    if (subscribers.length > 0) {
      const ids = encodePlantIds(created);
      const traces = createdTraces === undefined ? null : encodeTraceParents(createdTraces);
      for (const subscriptionId of subscribers) this.#statements.insertMessages.run(subscriptionId, now, created.length, ids, traces);
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

/** The traceparents a batch came with, aligned with its plants (see `PlantBatchWriter.createPlants`). */
export type TraceParents = readonly (string | undefined)[];

/** The bytes of a plant in a webhook_batches row's trace_parents: trace id (16), span id (8) and flags (1). */
const TRACE_PARENT_BYTES = 25;
const NO_TRACE_ID = '0'.repeat(32);

/** Each plant's traceparent as its 25 bytes, zeros for none (a valid trace id is never zero), version 00 left out; null when none has one. */
export function encodeTraceParents(traceParents: readonly (string | undefined)[]): Buffer | null {
  let bytes: Buffer | null = null;
  for (const [index, traceParent] of traceParents.entries()) {
    if (!isTraceParent(traceParent)) continue;
    bytes ??= Buffer.alloc(TRACE_PARENT_BYTES * traceParents.length);
    const at = TRACE_PARENT_BYTES * index;
    bytes.write(traceParent.slice(3, 35), at, 'hex');
    bytes.write(traceParent.slice(36, 52), at + 16, 'hex');
    bytes.write(traceParent.slice(53, 55), at + 24, 'hex');
  }
  return bytes;
}

/** The traceparents `encodeTraceParents` packed, null for a plant without one. */
export function decodeTraceParents(bytes: Uint8Array): (string | null)[] {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: Math.floor(view.length / TRACE_PARENT_BYTES) }, (_, index) => {
    const at = TRACE_PARENT_BYTES * index;
    const traceId = view.toString('hex', at, at + 16);
    if (traceId === NO_TRACE_ID) return null;
    return `00-${traceId}-${view.toString('hex', at + 16, at + 24)}-${view.toString('hex', at + 24, at + 25)}`;
  });
}
