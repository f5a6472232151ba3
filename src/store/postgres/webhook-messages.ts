import type { Connections } from './primary-pool.js';
import { subscriptionsLocked } from './subscription-lock.js';
import type { MessageState, OutboxMessage } from '../webhook-store.js';

/**
 * Newest first (see `WebhookStore.listMessages`): packed batches before numbered messages, as batches are
 * unpacked oldest first. One statement, so one snapshot: a message a claim unpacks meanwhile is listed once.
 */
export async function listMessages(pool: Connections, { subscriptionId, state, limit }: { subscriptionId: number; state?: MessageState; limit: number }): Promise<OutboxMessage[]> {
  const { rows } = await pool.query<{
    id: string | null;
    plant_id: string;
    state: MessageState;
    attempts: number;
    created_at: Date;
    next_attempt_at: Date;
    finished_at: Date | null;
    last_result: string | null;
  }>(
    `WITH packed AS (
       SELECT b.id AS batch_id, plant.position, NULL::bigint AS id, plant.id AS plant_id, 'pending' AS state, 0 AS attempts,
              b.created_at, coalesce(b.requeued_at, b.created_at) AS next_attempt_at, NULL::timestamptz AS finished_at, NULL AS last_result
         FROM webhook_batches AS b CROSS JOIN unnest(b.plant_ids) WITH ORDINALITY AS plant (id, position)
        WHERE b.subscription_id = $1 AND coalesce($2::text, 'pending') = 'pending'
        ORDER BY b.id DESC, plant.position DESC LIMIT $3
     ), numbered AS (
       SELECT NULL::bigint AS batch_id, NULL::bigint AS position, id, plant_id, state, attempts, created_at, next_attempt_at, finished_at, last_result
         FROM webhook_messages
        WHERE subscription_id = $1 AND ($2::text IS NULL OR state = $2) ORDER BY id DESC LIMIT $3 - (SELECT count(*) FROM packed)
     )
     SELECT id, plant_id, state, attempts, created_at, next_attempt_at, finished_at, last_result
       FROM (SELECT * FROM packed UNION ALL SELECT * FROM numbered) AS listed
      ORDER BY batch_id DESC NULLS LAST, position DESC, id DESC`,
    [subscriptionId, state ?? null, limit],
  );
  return rows.map((row) => ({
    id: row.id === null ? null : BigInt(row.id),
    plantId: BigInt(row.plant_id),
    state: row.state,
    attempts: row.attempts,
    createdAt: row.created_at,
    nextAttemptAt: row.state === 'pending' ? row.next_attempt_at : null,
    finishedAt: row.finished_at,
    lastResult: row.last_result,
  }));
}

/**
 * One statement (see `WebhookStore.resendMessages`): the subscription is locked first (`subscriptionsLocked`),
 * then the chosen rows, so what each was is read as it is updated, even beside a dispatcher settling it.
 */
export async function resendMessages(pool: Connections, { subscriptionId, messageId }: { subscriptionId: number; messageId?: bigint }): Promise<{ queued: number; pending: number }> {
  const { rows } = await pool.query<{ queued: string; pending: string }>(
    `WITH ${subscriptionsLocked('$1')}, chosen AS (
       SELECT id, state FROM webhook_messages
        WHERE subscription_id = $1 AND subscription_id = ANY ((SELECT ids FROM subscriptions_locked)::bigint[])
          AND CASE WHEN $2::bigint IS NULL THEN state = 'failed' ELSE id = $2 END
          FOR UPDATE
     ), queued AS (
       UPDATE webhook_messages AS m
          SET state = 'pending', attempts = 0, next_attempt_at = now(), requeued_at = now(), finished_at = NULL, lease_owner = NULL
         FROM chosen AS c
        WHERE m.id = c.id AND c.state <> 'pending'
       RETURNING c.state AS was
     ), counted AS (
       UPDATE webhook_subscriptions
          SET delivered = greatest(0, delivered - (SELECT count(*) FROM queued WHERE was = 'delivered')),
              failed = greatest(0, failed - (SELECT count(*) FROM queued WHERE was = 'failed'))
        WHERE id = $1
     )
     SELECT (SELECT count(*) FROM queued) AS queued, (SELECT count(*) FROM chosen WHERE state = 'pending') AS pending`,
    [subscriptionId, messageId?.toString() ?? null],
  );
  return { queued: Number(rows[0]!.queued), pending: Number(rows[0]!.pending) };
}
