/**
 * The outbox's one lock order, a subscription's row before its messages and batches, so that no statement
 * deadlocks against a removal or a resume. The rows `ids` selects are locked in id order, as one array that a
 * statement reads by a scalar subquery before it locks any message. MATERIALIZED keeps the CTE from being
 * folded into the query that reads it.
 */
export function subscriptionsLocked(ids: string): string {
  return `subscriptions_locked AS MATERIALIZED (
  SELECT array_agg(id) AS ids FROM (SELECT id FROM webhook_subscriptions WHERE id IN (${ids}) ORDER BY id FOR NO KEY UPDATE) AS locked
)`;
}
