/**
 * A claim ($1 subscription, $2 owner, $3 most messages, $4 lease in ms); nothing while the subscription is
 * paused or removed. Due messages go in the order of `webhook_messages_due`, so it reads only the rows it takes
 * however long the backlog (deliveries promise no order). If fewer than $3 were due, the oldest packed batches
 * are unpacked into webhook_messages, the first rows claimed and the rest pending. Locked rows are skipped.
 */
export const CLAIM_MESSAGES = `WITH open AS (
  SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = $1 AND paused_at IS NULL AND removed_at IS NULL) AS open
), claimed AS (
  UPDATE webhook_messages AS m
     SET next_attempt_at = now() + $4 * interval '1 millisecond', lease_owner = $2, attempts = m.attempts + 1
   WHERE m.id = ANY (ARRAY(SELECT id FROM webhook_messages
                            WHERE subscription_id = $1 AND state = 'pending' AND next_attempt_at <= now() AND (SELECT open FROM open)
                            ORDER BY next_attempt_at LIMIT $3
                            FOR UPDATE SKIP LOCKED))
  RETURNING m.id, m.attempts, m.created_at, m.requeued_at, m.plant_id, m.trace_parent
), wanted AS (
  SELECT $3 - (SELECT count(*) FROM claimed) AS messages
), candidates AS (
  SELECT id, cardinality(plant_ids) AS plants FROM webhook_batches
   WHERE subscription_id = $1 AND (SELECT open FROM open) AND (SELECT messages FROM wanted) > 0
   ORDER BY id LIMIT $3
     FOR UPDATE SKIP LOCKED
), taken AS (
  DELETE FROM webhook_batches AS b
   USING (SELECT id, sum(plants) OVER (ORDER BY id) - plants AS before FROM candidates) AS c
   WHERE b.id = c.id AND c.before < (SELECT messages FROM wanted)
  RETURNING b.id, b.plant_ids, b.trace_parents, b.created_at, b.requeued_at, c.before
), unpacked AS (
  INSERT INTO webhook_messages (subscription_id, plant_id, created_at, requeued_at, next_attempt_at, attempts, lease_owner, trace_parent)
  SELECT $1, plant.id, t.created_at, t.requeued_at,
         CASE WHEN leased THEN now() + $4 * interval '1 millisecond' ELSE coalesce(t.requeued_at, t.created_at) END,
         CASE WHEN leased THEN 1 ELSE 0 END,
         CASE WHEN leased THEN $2 END,
         t.trace_parents[plant.position]
    FROM taken AS t
   CROSS JOIN unnest(t.plant_ids) WITH ORDINALITY AS plant (id, position)
   CROSS JOIN LATERAL (SELECT t.before + plant.position <= (SELECT messages FROM wanted) AS leased) AS lease
   ORDER BY t.id, plant.position
  RETURNING id, attempts, created_at, requeued_at, plant_id, lease_owner, trace_parent
)
SELECT m.id, m.attempts, m.created_at, m.requeued_at, p.id AS plant_id, p.name, p.tag, m.trace_parent
  FROM (SELECT id, attempts, created_at, requeued_at, plant_id, trace_parent FROM claimed
        UNION ALL
        SELECT id, attempts, created_at, requeued_at, plant_id, trace_parent FROM unpacked WHERE lease_owner IS NOT NULL) AS m
  JOIN plants AS p ON p.id = m.plant_id`;
