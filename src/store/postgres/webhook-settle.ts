import type { Settlement } from '../webhook-store.js';
import { subscriptionsLocked } from './subscription-lock.js';

/**
 * The outcomes of attempts in one statement ($1 owner, then one array per field), each message fenced by its
 * lease (owner and attempt); the counts come from the rows that really changed. Subscriptions are locked first
 * (`subscriptionsLocked`). Messages are found by key alone, never by state or subscription, so that no plan
 * reads the due index, whose entries for delivered messages stay behind until a vacuum.
 * A subscription's last error is that of its last settlement in the list, as on SQLite.
 */
export const SETTLE_MESSAGES = `WITH outcome AS (
  SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::int[], $5::text[], $6::bigint[], $7::text[], $8::text[]) WITH ORDINALITY
             AS o (message_id, subscription_id, attempt, outcome, retry_in_ms, error, result, position)
), ${subscriptionsLocked('SELECT subscription_id FROM outcome')}, settled AS (
  UPDATE webhook_messages AS m
     SET state = CASE WHEN o.outcome IN ('retry', 'released') THEN 'pending' ELSE o.outcome END,
         finished_at = CASE WHEN o.outcome IN ('retry', 'released') THEN NULL ELSE now() END,
         next_attempt_at = CASE o.outcome WHEN 'retry' THEN now() + o.retry_in_ms * interval '1 millisecond'
                                          WHEN 'released' THEN now() ELSE m.next_attempt_at END,
         attempts = CASE o.outcome WHEN 'released' THEN m.attempts - 1 ELSE m.attempts END,
         last_result = CASE o.outcome WHEN 'released' THEN m.last_result ELSE o.result END,
         lease_owner = NULL
    FROM outcome AS o
   WHERE m.id = o.message_id AND m.lease_owner = $1 AND m.attempts = o.attempt
     AND (SELECT ids FROM subscriptions_locked) IS NOT NULL
  RETURNING m.subscription_id, o.outcome
), counted AS (
  SELECT subscription_id, count(*) FILTER (WHERE outcome = 'delivered') AS delivered,
         count(*) FILTER (WHERE outcome = 'failed') AS failed
    FROM settled GROUP BY subscription_id
), errors AS (
  SELECT DISTINCT ON (subscription_id) subscription_id, error FROM outcome
   WHERE error IS NOT NULL ORDER BY subscription_id, position DESC
)
UPDATE webhook_subscriptions AS s
   SET delivered = s.delivered + coalesce(c.delivered, 0),
       failed = s.failed + coalesce(c.failed, 0),
       last_delivered_at = CASE WHEN coalesce(c.delivered, 0) > 0 THEN now() ELSE s.last_delivered_at END,
       last_error = coalesce(e.error, s.last_error),
       last_error_at = CASE WHEN e.error IS NULL THEN s.last_error_at ELSE now() END
  FROM (SELECT DISTINCT subscription_id FROM outcome) AS touched
  LEFT JOIN counted AS c USING (subscription_id)
  LEFT JOIN errors AS e USING (subscription_id)
 WHERE s.id = touched.subscription_id`;

export function settlementValues(owner: string, settlements: readonly Settlement[]): unknown[] {
  return [
    owner,
    settlements.map((s) => s.messageId.toString()),
    settlements.map((s) => s.subscriptionId),
    settlements.map((s) => s.attempt),
    settlements.map((s) => s.outcome),
    settlements.map((s) => (s.outcome === 'retry' ? s.retryInMs : 0)),
    settlements.map((s) => (s.outcome === 'retry' || s.outcome === 'failed' ? s.error : null)),
    settlements.map((s) => (s.outcome === 'delivered' ? s.answer : s.outcome === 'released' ? null : s.error)),
  ];
}
