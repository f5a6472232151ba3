/**
 * `OUTBOX_OF_INSERTED` with the W3C traceparents of the plants created: $4,
 * aligned with the ids $1 (distinct), or NULL when traces are off. Each
 * batch row's trace_parents is aligned with its plant_ids, and NULL when no
 * plant created has one. Without traces (`created`'s first branch) it packs
 * the ids as `OUTBOX_OF_INSERTED` does, at the same cost: the other branch's
 * one-time filter keeps it from running. With traces both arrays are ordered
 * by the plants' position in $1, so they stay aligned whatever order the
 * join yields. Each branch answers one row, whose ids are NULL when its
 * filter is false. `created` is MATERIALIZED so that it is made once a batch:
 * inlined, it was made again for each subscription. `MESSAGES_WRITTEN`
 * (migrations.ts) counts its messages.
 *
 * Part of the function of migration 10, and of the statement the store
 * sends on a direct connection (plant-batch.ts), so that both write the same
 * messages. A released migration's text never changes: a change to this is a
 * new constant, with a new migration for the function.
 */
export const OUTBOX_OF_TRACED = `created AS MATERIALIZED (
            SELECT array_agg(inserted.id) AS ids, NULL::TEXT[] AS trace_parents FROM inserted WHERE $4::text[] IS NULL
            UNION ALL
            SELECT array_agg(inserted.id ORDER BY sent.position),
                   CASE WHEN count(sent.trace_parent) > 0 THEN array_agg(sent.trace_parent ORDER BY sent.position) END
              FROM inserted JOIN unnest($1::bigint[], $4::text[]) WITH ORDINALITY AS sent (id, trace_parent, position) ON sent.id = inserted.id
             WHERE $4::text[] IS NOT NULL
          ), outbox AS (
            INSERT INTO webhook_batches (subscription_id, plant_ids, trace_parents, created_at)
            SELECT subscription.id, created.ids, created.trace_parents, now()
              FROM created CROSS JOIN webhook_subscriptions AS subscription
             WHERE subscription.removed_at IS NULL AND created.ids IS NOT NULL
            RETURNING cardinality(plant_ids) AS messages
          )`;
