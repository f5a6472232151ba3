import type pg from 'pg';
import type { Connections } from './primary-pool.js';
import { type Migration, pendingSteps, type SchemaChange, StoreMissing } from '../migration.js';
import { OUTBOX_OF_TRACED } from './traced-outbox.js';

/**
 * The webhook messages of the plants a batch created (the rows of `inserted`),
 * packed: one webhook_batches row for each active subscription, holding the
 * ids in the order they were created. A claim unpacks them into
 * webhook_messages rows, one a plant, only as deliveries need them, so a
 * create writes two index entries a batch rather than two a plant. Part of
 * the functions of migration 8, and of the statement the store sends on a
 * direct connection (plant-batch.ts), so that both write the same messages.
 * `messages` is the number of messages written.
 */
export const OUTBOX_OF_INSERTED = `outbox AS (
            INSERT INTO webhook_batches (subscription_id, plant_ids, created_at)
            SELECT subscription.id, created.ids, now()
              FROM (SELECT array_agg(inserted.id) AS ids FROM inserted) AS created
              CROSS JOIN webhook_subscriptions AS subscription
             WHERE subscription.removed_at IS NULL AND created.ids IS NOT NULL
            RETURNING cardinality(plant_ids) AS messages
          )`;

/** How many messages `OUTBOX_OF_INSERTED` (or `OUTBOX_OF_TRACED`) wrote, as an INTEGER. */
export const MESSAGES_WRITTEN = '(SELECT coalesce(sum(messages), 0) FROM outbox)::INTEGER';

/**
 * Migration 10's create_plant_batch, of four arguments: the statement the
 * store sends on a direct connection (plant-batch.ts), kept in the server for
 * connections that keep no named statement, as migration 4's is. Its
 * arguments are named for `\df`, and read as $1 to $4 so that its text is
 * the statement's. The ids must be distinct, as the store sends them.
 */
const CREATE_TRACED_PLANT_BATCH = `CREATE FUNCTION create_plant_batch(ids BIGINT[], names TEXT[], tags TEXT[], trace_parents TEXT[])
        RETURNS TABLE (plants_created INTEGER, messages_written INTEGER, created_ids TEXT[])
        LANGUAGE plpgsql
      AS $$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
          WITH inserted AS (
            INSERT INTO plants (id, name, tag)
            SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
            ON CONFLICT (id) DO NOTHING
            RETURNING id
          ), ${OUTBOX_OF_TRACED}
          SELECT count(*)::INTEGER,
                 ${MESSAGES_WRITTEN},
                 CASE WHEN count(*) < cardinality($1::bigint[]) THEN array_agg(inserted.id::TEXT) END
            FROM inserted;
      END
      $$;`;

/**
 * The outbox of migrations 3 and 4, as they wrote it: one webhook_messages
 * row a plant and subscription. A migration's text never changes once
 * released; migration 8 replaces their functions.
 */
const OUTBOX_ROW_A_MESSAGE = `outbox AS (
            INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at)
            SELECT subscription.id, inserted.id, now(), now()
              FROM inserted CROSS JOIN webhook_subscriptions AS subscription
             WHERE subscription.removed_at IS NULL
            RETURNING 1
          )`;

/**
 * The batch insert as the functions hold it (the store calls the function
 * behind a pooler that keeps no named statement, and sends plant-batch.ts's
 * statement otherwise): the first plant of each id in the batch unless the id
 * is taken (`inserted`), and the webhook messages of the plants created
 * (`outbox`), in one statement and so in one transaction. `ids`, `names` and
 * `tags` are the functions' arguments.
 */
function insertBatch(outbox: string): string {
  return `WITH inserted AS (
            INSERT INTO plants (id, name, tag)
            SELECT DISTINCT ON (id) id, name, tag
              FROM unnest(ids, names, tags) WITH ORDINALITY AS batch (id, name, tag, position)
             ORDER BY id, position
            ON CONFLICT (id) DO NOTHING
            RETURNING id
          ), ${outbox}`;
}

/**
 * A PL/pgSQL function of the batch insert, the store's statement kept in the
 * server (see migration 3): `returns` its columns, `answer` the SELECT over
 * `inserted` that gives them.
 */
function batchInsertFunction(name: string, returns: string, outbox: string, answer: string): string {
  return `CREATE OR REPLACE FUNCTION ${name}(ids BIGINT[], names TEXT[], tags TEXT[])
        RETURNS TABLE (${returns})
        LANGUAGE plpgsql
      AS $$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
          ${insertBatch(outbox)}
          ${answer};
      END
      $$;`;
}

/** The function of migration 3 (kept for instances of older builds), with `outbox` and `messages` as its messages. */
const createPlantsFunction = (outbox: string, messages: string) =>
  batchInsertFunction('create_plants', 'id BIGINT, messages INTEGER', outbox, `SELECT inserted.id, ${messages} FROM inserted`);

/** The function of migration 4, which the store calls, with `outbox` and `messages` as its messages. */
const createPlantBatchFunction = (outbox: string, messages: string) =>
  batchInsertFunction(
    'create_plant_batch',
    'plants_created INTEGER, messages_written INTEGER, created_ids TEXT[]',
    outbox,
    `SELECT count(*)::INTEGER,
                 ${messages},
                 CASE WHEN count(*) < cardinality(ids) THEN array_agg(inserted.id::TEXT) END
            FROM inserted`,
  );

/** How many messages `OUTBOX_ROW_A_MESSAGE` wrote. */
const ROWS_WRITTEN = '(SELECT count(*) FROM outbox)::INTEGER';

/** This backend's schema changes (see `Migration`). */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'create plants and tokens',
    sql: `
      CREATE TABLE plants (
        id BIGINT PRIMARY KEY,
        name TEXT NOT NULL,
        tag TEXT,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
      );

      CREATE TABLE tokens (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ,
        revoked_at TIMESTAMPTZ
      );

      -- A name identifies one active token; a revoked token's name may be reused.
      CREATE UNIQUE INDEX tokens_active_name ON tokens (name) WHERE revoked_at IS NULL;
    `,
  },
  {
    version: 2,
    name: 'create webhook subscriptions and messages',
    sql: `
      CREATE TABLE webhook_subscriptions (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        url TEXT NOT NULL,
        description TEXT,
        -- Signing needs the secret itself (HMAC), so unlike a token it cannot be kept as a hash.
        secret TEXT NOT NULL,
        key TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_until TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL,
        removed_at TIMESTAMPTZ,
        delivered BIGINT NOT NULL DEFAULT 0,
        failed BIGINT NOT NULL DEFAULT 0,
        last_error TEXT,
        last_error_at TIMESTAMPTZ,
        last_delivered_at TIMESTAMPTZ
      );

      -- The outbox. A pending message is due at next_attempt_at; a claim moves that past its lease.
      -- No foreign keys: a batch that began before a subscription was removed must still commit
      -- its plants; its late messages are pruned.
      CREATE TABLE webhook_messages (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        subscription_id BIGINT NOT NULL,
        plant_id BIGINT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at TIMESTAMPTZ NOT NULL,
        lease_owner TEXT,
        finished_at TIMESTAMPTZ
      );

      CREATE INDEX webhook_messages_due ON webhook_messages (subscription_id, next_attempt_at) WHERE state = 'pending';
      CREATE INDEX webhook_messages_finished ON webhook_messages (finished_at) WHERE state <> 'pending';
    `,
  },
  {
    version: 3,
    name: 'create the batch insert as a function',
    // The group commit's one statement, kept in the server: a PL/pgSQL function's statements are
    // parsed and planned once per server connection and then reused, which an unnamed statement
    // from the client never is (it is parsed and planned for every batch), and which, unlike a
    // named prepared statement, needs nothing of the connection the call arrives on, so it works
    // behind PgBouncer's transaction pooling. A lone create commits about 0.15 ms sooner
    // (bench/postgres-batch-insert.mjs).
    //
    // The first plant of each id in the batch is inserted unless the id is taken; the plants created
    // get their webhook messages in the same statement, so in the same transaction. Each created id
    // comes back with the number of messages written for the whole batch.
    sql: createPlantsFunction(OUTBOX_ROW_A_MESSAGE, ROWS_WRITTEN),
  },
  {
    version: 4,
    name: 'create the batch insert that answers in one row',
    // Migration 3's statement, answering with one row instead of one a created plant: how many
    // plants were created, how many webhook messages were written, and the ids created only when
    // some plant of the batch was not. A batch of new plants, the common one, is then read as one
    // row. The counting is inside the function, where its plan is kept, rather than in the call,
    // which as an unnamed statement would be planned again for every batch (0.1 ms more a batch).
    // create_plants stays: instances of an older build, running beside this one during an upgrade, call it.
    sql: createPlantBatchFunction(OUTBOX_ROW_A_MESSAGE, ROWS_WRITTEN),
  },
  {
    version: 5,
    name: 'record when each token was last used',
    sql: `
      -- Written every few seconds from each server's memory, never per request, and only ever moved forward.
      -- (revoked_at may also lie ahead from now on: a rotated token works until then.)
      ALTER TABLE tokens ADD COLUMN last_used_at TIMESTAMPTZ;
    `,
  },
  {
    version: 6,
    name: 'keep every retired webhook secret until its own window ends',
    sql: `
      -- One row a secret rotated out, signing beside the current one until valid_until. The
      -- previous_secret columns held only the last, so a second rotation cut off the first.
      CREATE TABLE webhook_retired_secrets (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        subscription_id BIGINT NOT NULL,
        secret TEXT NOT NULL,
        valid_until TIMESTAMPTZ NOT NULL
      );

      CREATE INDEX webhook_retired_secrets_subscription ON webhook_retired_secrets (subscription_id);

      -- previous_secret stays, still written with the newest retired secret: instances of an older
      -- build, running beside this one during an upgrade, sign with it.
      INSERT INTO webhook_retired_secrets (subscription_id, secret, valid_until)
        SELECT id, previous_secret, previous_secret_until FROM webhook_subscriptions
         WHERE previous_secret IS NOT NULL AND previous_secret_until IS NOT NULL AND removed_at IS NULL;
    `,
  },
  {
    version: 7,
    name: 'pause webhook subscriptions, queue messages again, keep each message its last result',
    // Nullable columns without a default: each ALTER only changes the catalogue, rewriting no row,
    // so the lock it takes on a busy outbox is held for moments. The insert of the functions of
    // migrations 3 and 4, and instances of the previous build, write rows without them.
    sql: `
      -- Set while paused: messages are still written for the subscription, and none is claimed.
      ALTER TABLE webhook_subscriptions ADD COLUMN paused_at TIMESTAMPTZ;
      -- The last attempt's answer or error, for webhook messages.
      ALTER TABLE webhook_messages ADD COLUMN last_result TEXT;
      -- When a resend, or the resume of a paused subscription, queued the message again: its retry
      -- window runs from then rather than from created_at, which stays the plant's commit.
      ALTER TABLE webhook_messages ADD COLUMN requeued_at TIMESTAMPTZ;
    `,
  },
  {
    version: 8,
    name: 'write webhook messages packed, one row a batch',
    // A create's transaction wrote a webhook_messages row, with its primary key and due index
    // entries, for every plant: under saturation with one subscription, 8 % of the creates a
    // second (bench/results/2026-11-28-postgres-outbox-batches.md). Now it writes one
    // webhook_batches row a subscription for the whole batch, and a claim unpacks batches into
    // webhook_messages only as deliveries need them. Instances of the previous build, running
    // beside this one during an upgrade, still write and claim webhook_messages rows; the batches
    // are delivered by this build's instances.
    sql: `
      CREATE TABLE webhook_batches (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        subscription_id BIGINT NOT NULL,
        -- The created plants' ids, in the order they were created.
        plant_ids BIGINT[] NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        -- Set when the resume of a paused subscription queued the batch again, as for a message.
        requeued_at TIMESTAMPTZ
      );

      CREATE INDEX webhook_batches_subscription ON webhook_batches (subscription_id, id);

      ${createPlantsFunction(OUTBOX_OF_INSERTED, MESSAGES_WRITTEN)}
      ${createPlantBatchFunction(OUTBOX_OF_INSERTED, MESSAGES_WRITTEN)}
    `,
  },
  {
    version: 9,
    name: 'rate limits: a policy of its own for a token, and the buckets every instance takes slices of',
    // A nullable column without a default changes only the catalogue, as in migration 7.
    sql: `
      -- N/DURATION (600/1m), or NULL for RATE_LIMIT's.
      ALTER TABLE tokens ADD COLUMN rate_limit TEXT;
      -- One token bucket a client; a client without a row has a full one (rate-limit-store.ts).
      -- Times are milliseconds by the database's clock, which every instance shares.
      CREATE TABLE rate_limit_buckets (
        key TEXT PRIMARY KEY,
        tokens DOUBLE PRECISION NOT NULL,
        -- What the last take got, for the statement's RETURNING.
        granted INTEGER NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        -- When the bucket is full again, its row no longer needed.
        full_at DOUBLE PRECISION NOT NULL
      );
      CREATE INDEX rate_limit_buckets_full_at ON rate_limit_buckets (full_at);
    `,
  },
  {
    version: 10,
    name: 'keep the trace context of the create that made each webhook message',
    // Nullable columns without a default change only the catalogue, as in migration 7. The
    // three-argument create_plant_batch stays, writing batches without traceparents: instances of
    // the previous build, running beside this one during an upgrade, call it.
    sql: `
      -- The W3C traceparents of a batch's created plants, aligned with plant_ids (NULL for a plant
      -- without one); NULL when none of them had one, as every batch without traces has.
      ALTER TABLE webhook_batches ADD COLUMN trace_parents TEXT[];
      -- The plant's traceparent, once its batch is unpacked; NULL for none.
      ALTER TABLE webhook_messages ADD COLUMN trace_parent TEXT;

      ${CREATE_TRACED_PLANT_BATCH}
    `,
  },
];

/** Any constant does; this one is "plantsto" read as ASCII. */
const MIGRATION_LOCK = 8100956956760700015n;

/** What a database without this service's table of versions is, as StoreMissing and SchemaState say it. */
export const NO_SCHEMA = 'the database holds no plantstore tables';

/** The version of the schema, or undefined when the database holds no table of versions: no store of this service. */
export async function schemaVersion(db: Pick<pg.ClientBase, 'query'>): Promise<number | undefined> {
  const { rows } = await db.query<{ found: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS found");
  if (!rows[0]?.found) return undefined;
  const version = await db.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
  return version.rows[0]?.version ?? 0;
}

/**
 * Brings the schema up to the newest version in one transaction, and says
 * from which version to which. A transaction-scoped advisory lock makes
 * instances that start together take turns: the first migrates, the others
 * then find nothing left to do. Without `mayCreate`, a database that holds
 * no schema yet is a StoreMissing, and nothing is created in it.
 */
export async function migrate(pool: Connections, steps: readonly Migration[] = migrations, { mayCreate = true } = {}): Promise<SchemaChange> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    const found = await schemaVersion(client);
    if (found === undefined && !mayCreate) throw new StoreMissing(NO_SCHEMA);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`);
    const from = found ?? 0;
    const pending = pendingSteps(steps, from);
    for (const step of pending) {
      await client.query(step.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [step.version, step.name]);
    }
    await client.query('COMMIT');
    return { from, to: pending.at(-1)?.version ?? from };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
