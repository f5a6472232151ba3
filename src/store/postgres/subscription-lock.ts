/**
 * The one lock order of the outbox: a subscription's row, then its messages
 * and batches. A removal and a resume lock the subscription with their first
 * step, then its messages; a statement that locked a message first and the
 * subscription after (as a settlement's counts once did) would deadlock
 * against them. A claim waits on no lock (`SKIP LOCKED`).
 *
 * In one statement the order holds through this CTE, `subscriptions_locked`:
 * the rows of the subscriptions `ids` selects, locked in id order (so that two
 * of these statements take turns too), as one array. A statement reads that
 * array by a scalar subquery (`(SELECT ids FROM subscriptions_locked)`), which
 * runs when the first message is read, before any is locked: it compares its
 * messages' `subscription_id` to it, or, where that would steer the plan to
 * the wrong index, tests it once for the whole statement (webhook-settle.ts).
 * MATERIALIZED keeps it from being folded into the query that reads it.
 */
export function subscriptionsLocked(ids: string): string {
  return `subscriptions_locked AS MATERIALIZED (
  SELECT array_agg(id) AS ids FROM (SELECT id FROM webhook_subscriptions WHERE id IN (${ids}) ORDER BY id FOR NO KEY UPDATE) AS locked
)`;
}
