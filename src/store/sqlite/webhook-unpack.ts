import type Database from 'better-sqlite3';
import { decodePlantIds, decodeTraceParents } from './plant-batch.js';

/** A claimed webhook_messages row, read with safe integers. */
export interface ClaimedRow {
  id: bigint;
  plant_id: bigint;
  attempts: bigint;
  created_at: bigint;
  requeued_at: bigint | null;
  trace_parent: string | null;
}

/** A webhook_batches row as a claim unpacks it; trace_parents is null when none of its plants has a traceparent. */
interface PackedBatch {
  id: number;
  created_at: number;
  requeued_at: number | null;
  plant_ids: Uint8Array;
  trace_parents: Uint8Array | null;
}

/** Unpacks the oldest webhook_batches rows into webhook_messages, one a plant, only as claims need them: the rest of a backlog stays a row a batch. */
export class BatchUnpacker {
  readonly #statements;

  constructor(db: Database.Database) {
    this.#statements = {
      nextBatch: db.prepare('SELECT id, created_at, requeued_at, plant_ids, trace_parents FROM webhook_batches WHERE subscription_id = ? ORDER BY id LIMIT 1'),
      dropBatch: db.prepare('DELETE FROM webhook_batches WHERE id = ?'),
      insertMessage: db.prepare(
        'INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at, requeued_at, trace_parent) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      insertClaimed: db
        .prepare(
          `INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at, requeued_at, trace_parent, lease_owner, attempts)
           VALUES (?, ?, ?, ?, ?, ?, ?, 1) RETURNING id, plant_id, attempts, created_at, requeued_at, trace_parent`,
        )
        .safeIntegers(true),
    };
  }

  /** Unpacks batches until `wanted` messages are made: those claimed by `owner` onto `into`, the rest of their batch pending. */
  unpack(subscriptionId: number, claim: { owner: string; leaseEndsAt: number; wanted: number; into: ClaimedRow[] }): void {
    let made = 0;
    while (made < claim.wanted) {
      const batch = this.#statements.nextBatch.get(subscriptionId) as PackedBatch | undefined;
      if (batch === undefined) break;
      const { created_at: createdAt, requeued_at: requeuedAt } = batch;
      const traces = batch.trace_parents === null ? [] : decodeTraceParents(batch.trace_parents);
      for (const [position, plantId] of decodePlantIds(batch.plant_ids).entries()) {
        const trace = traces[position] ?? null;
        if (made < claim.wanted) {
          claim.into.push(this.#statements.insertClaimed.get(subscriptionId, plantId, createdAt, claim.leaseEndsAt, requeuedAt, trace, claim.owner) as ClaimedRow);
        } else {
          this.#statements.insertMessage.run(subscriptionId, plantId, createdAt, createdAt, requeuedAt, trace);
        }
        made += 1;
      }
      this.#statements.dropBatch.run(batch.id);
    }
  }
}
