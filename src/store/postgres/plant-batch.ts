import { createHash } from 'node:crypto';
import { OUTBOX_OF_INSERTED } from './migrations.js';

/** What a batch statement answers, in its one row. */
export interface BatchOutcome {
  plants_created: number;
  messages_written: number;
  /** The ids created when some plant of the batch was not; null when all of them were, or none. */
  created_ids: string[] | null;
}

/**
 * The group commit's statement for a batch of plants with distinct ids ($1
 * ids, $2 names, $3 tags). It inserts each plant unless its id is taken,
 * writes the webhook messages of the plants it created in the same statement
 * (so in the same transaction), and answers with one row: how many plants it
 * created, the messages written, and the ids created only when some plant was
 * not (a batch of new plants, the common one, needs none). The ids are
 * distinct because the store sends only the first plant of each id: the
 * statement then needs no `DISTINCT ON` (about 10 µs of the database's CPU a
 * batch) to insert the first, and does not rest on the order in which the
 * executor reads unnest's rows, which SQL does not promise.
 */
export const INSERT_PLANTS = `WITH inserted AS (
  INSERT INTO plants (id, name, tag)
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), ${OUTBOX_OF_INSERTED}
SELECT count(*)::INTEGER AS plants_created,
       (SELECT count(*) FROM outbox)::INTEGER AS messages_written,
       CASE WHEN count(*) < cardinality($1::bigint[]) THEN array_agg(inserted.id::TEXT) END AS created_ids
  FROM inserted`;

/**
 * `INSERT_PLANTS` as a named prepared statement, parsed and planned once a
 * connection rather than once a batch. The name carries a hash of the text:
 * behind a pooler that lends server connections to any client, a statement
 * found under this name is this text, whichever version prepared it.
 */
export const INSERT_PLANTS_NAME = `plantstore_insert_plants_${createHash('sha256').update(INSERT_PLANTS).digest('hex').slice(0, 16)}`;

/**
 * The same batch as a call to the function of migration 4, for connections
 * that keep no named statement (PgBouncer's transaction pooling): sent
 * unnamed, the call is parsed for every batch, but the function's own
 * statement is planned once per server connection, inside the server.
 */
export const CALL_CREATE_PLANT_BATCH = 'SELECT plants_created, messages_written, created_ids FROM create_plant_batch($1::bigint[], $2::text[], $3::text[])';
