import type Database from 'better-sqlite3';
import type { MessageState, OutboxMessage } from '../webhook-store.js';
import { decodePlantIds } from './plant-batch.js';

interface MessageRow {
  id: bigint;
  plant_id: bigint;
  state: MessageState;
  attempts: bigint;
  created_at: bigint;
  next_attempt_at: bigint;
  finished_at: bigint | null;
  last_result: string | null;
}

/** Newest first: packed messages before numbered ones, as batches are unpacked oldest first; runs in the caller's transaction. */
export function listMessages(db: Database.Database, { subscriptionId, state, limit }: { subscriptionId: number; state?: MessageState; limit: number }): OutboxMessage[] {
  const listed: OutboxMessage[] = [];
  if (state === undefined || state === 'pending') {
    const batches = db.prepare('SELECT created_at, plant_ids FROM webhook_batches WHERE subscription_id = ? ORDER BY id DESC');
    // Read a batch at a time, only as far as the limit needs: a paused subscription's backlog may be long.
    for (const batch of batches.iterate(subscriptionId) as IterableIterator<{ created_at: number; plant_ids: Uint8Array }>) {
      for (const plantId of decodePlantIds(batch.plant_ids).reverse()) {
        if (listed.length === limit) return listed;
        const createdAt = new Date(batch.created_at);
        listed.push({ id: null, plantId, state: 'pending', attempts: 0, createdAt, nextAttemptAt: createdAt, finishedAt: null, lastResult: null });
      }
    }
  }
  const rows = db
    .prepare(
      `SELECT id, plant_id, state, attempts, created_at, next_attempt_at, finished_at, last_result FROM webhook_messages
        WHERE subscription_id = ? AND (? IS NULL OR state = ?) ORDER BY id DESC LIMIT ?`,
    )
    .safeIntegers(true)
    .all(subscriptionId, state ?? null, state ?? null, limit - listed.length) as MessageRow[];
  for (const row of rows) {
    listed.push({
      id: row.id,
      plantId: row.plant_id,
      state: row.state,
      attempts: Number(row.attempts),
      createdAt: new Date(Number(row.created_at)),
      nextAttemptAt: row.state === 'pending' ? new Date(Number(row.next_attempt_at)) : null,
      finishedAt: row.finished_at === null ? null : new Date(Number(row.finished_at)),
      lastResult: row.last_result,
    });
  }
  return listed;
}

/** See `WebhookStore.resendMessages`; runs in the caller's transaction. */
export function resendMessages(db: Database.Database, { subscriptionId, messageId }: { subscriptionId: number; messageId?: bigint }, now: number): { queued: number; pending: number } {
  const chosen = messageId === undefined ? `subscription_id = ? AND state = 'failed'` : 'subscription_id = ? AND id = ?';
  const keys = messageId === undefined ? [subscriptionId] : [subscriptionId, messageId];
  const found = db
    .prepare(
      `SELECT count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'delivered') AS delivered,
              count(*) FILTER (WHERE state = 'failed') AS failed
         FROM webhook_messages WHERE ${chosen}`,
    )
    .get(...keys) as { pending: number; delivered: number; failed: number };
  db.prepare(
    `UPDATE webhook_messages SET state = 'pending', attempts = 0, next_attempt_at = ?, requeued_at = ?, finished_at = NULL, lease_owner = NULL
      WHERE ${chosen} AND state <> 'pending'`,
  ).run(now, now, ...keys);
  db.prepare('UPDATE webhook_subscriptions SET delivered = max(0, delivered - ?), failed = max(0, failed - ?) WHERE id = ?').run(found.delivered, found.failed, subscriptionId);
  return { queued: found.delivered + found.failed, pending: found.pending };
}
