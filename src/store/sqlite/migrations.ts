import type Database from 'better-sqlite3';
import { type Migration, pendingSteps, type SchemaChange } from '../migration.js';

/** This backend's schema changes (see `Migration`). */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'create plants and tokens',
    sql: `
      -- INTEGER PRIMARY KEY is the rowid: a signed 64-bit integer, the whole int64 range.
      CREATE TABLE plants (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        tag TEXT,
        created_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE tokens (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER
      ) STRICT;

      -- A name identifies one active token; a revoked token's name may be reused.
      CREATE UNIQUE INDEX tokens_active_name ON tokens (name) WHERE revoked_at IS NULL;
    `,
  },
  {
    version: 2,
    name: 'create webhook subscriptions and messages',
    sql: `
      CREATE TABLE webhook_subscriptions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        url TEXT NOT NULL,
        description TEXT,
        -- Signing needs the secret itself (HMAC), so unlike a token it cannot be kept as a hash.
        secret TEXT NOT NULL,
        key TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_until INTEGER,
        created_at INTEGER NOT NULL,
        removed_at INTEGER,
        delivered INTEGER NOT NULL DEFAULT 0,
        failed INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        last_error_at INTEGER,
        last_delivered_at INTEGER
      ) STRICT;

      -- The outbox. A pending message is due at next_attempt_at; a claim moves that past its lease.
      CREATE TABLE webhook_messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        subscription_id INTEGER NOT NULL,
        plant_id INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        lease_owner TEXT,
        finished_at INTEGER
      ) STRICT;

      CREATE INDEX webhook_messages_due ON webhook_messages (subscription_id, next_attempt_at) WHERE state = 'pending';
      CREATE INDEX webhook_messages_finished ON webhook_messages (finished_at) WHERE state <> 'pending';

      -- Where a batch of creates writes its messages: one row a subscription for the whole batch,
      -- the created plants' ids as 8-byte little-endian integers, instead of a webhook_messages row
      -- (and two index entries) a plant. The dispatcher turns them into webhook_messages rows, in a
      -- transaction of its own, as it claims.
      CREATE TABLE webhook_batches (
        id INTEGER PRIMARY KEY,
        subscription_id INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        plants INTEGER NOT NULL,
        plant_ids BLOB NOT NULL
      ) STRICT;

      CREATE INDEX webhook_batches_subscription ON webhook_batches (subscription_id, id);
    `,
  },
  {
    version: 3,
    name: 'record when each token was last used',
    sql: `
      -- Written every few seconds from each server's memory, never per request, and only ever moved forward.
      -- (revoked_at may also lie ahead from now on: a rotated token works until then.)
      ALTER TABLE tokens ADD COLUMN last_used_at INTEGER;
    `,
  },
  {
    version: 4,
    name: 'keep every retired webhook secret until its own window ends',
    sql: `
      -- One row a secret rotated out, signing beside the current one until valid_until. The
      -- previous_secret columns held only the last, so a second rotation cut off the first.
      CREATE TABLE webhook_retired_secrets (
        id INTEGER PRIMARY KEY,
        subscription_id INTEGER NOT NULL,
        secret TEXT NOT NULL,
        valid_until INTEGER NOT NULL
      ) STRICT;

      CREATE INDEX webhook_retired_secrets_subscription ON webhook_retired_secrets (subscription_id);

      -- previous_secret stays, still written with the newest retired secret: instances of an older
      -- build, running beside this one during an upgrade, sign with it.
      INSERT INTO webhook_retired_secrets (subscription_id, secret, valid_until)
        SELECT id, previous_secret, previous_secret_until FROM webhook_subscriptions
         WHERE previous_secret IS NOT NULL AND previous_secret_until IS NOT NULL AND removed_at IS NULL;
    `,
  },
  {
    version: 5,
    name: 'pause webhook subscriptions, queue messages again, keep each message its last result',
    sql: `
      -- Set while paused: messages are still written for the subscription, and none is claimed.
      ALTER TABLE webhook_subscriptions ADD COLUMN paused_at INTEGER;
      -- The last attempt's answer or error, for webhook messages.
      ALTER TABLE webhook_messages ADD COLUMN last_result TEXT;
      -- When a resend, or the resume of a paused subscription, queued the message again: its retry
      -- window runs from then rather than from created_at, which stays the plant's commit.
      ALTER TABLE webhook_messages ADD COLUMN requeued_at INTEGER;
      ALTER TABLE webhook_batches ADD COLUMN requeued_at INTEGER;
    `,
  },
  {
    version: 6,
    name: 'rate limits: a policy of its own for a token, and the buckets every process takes slices of',
    sql: `
      -- N/DURATION (600/1m), or NULL for RATE_LIMIT's.
      ALTER TABLE tokens ADD COLUMN rate_limit TEXT;
      -- One token bucket a client; a client without a row has a full one (rate-limit-store.ts).
      CREATE TABLE rate_limit_buckets (
        key TEXT PRIMARY KEY,
        tokens REAL NOT NULL,
        -- What the last take got, for the statement's RETURNING.
        granted INTEGER NOT NULL,
        updated_at REAL NOT NULL,
        -- When the bucket is full again, its row no longer needed.
        full_at REAL NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX rate_limit_buckets_full_at ON rate_limit_buckets (full_at);
    `,
  },
  {
    version: 7,
    name: 'keep the trace context of the create that made each webhook message',
    sql: `
      -- The W3C traceparents of a batch's created plants, aligned with plant_ids: 25 bytes a plant
      -- (trace id, span id, flags), zeros for none (plant-batch.ts). NULL when none of them had one,
      -- as every batch without traces, and every one written by an older build, has.
      ALTER TABLE webhook_batches ADD COLUMN trace_parents BLOB;
      -- The plant's traceparent as its create sent it, once its batch is unpacked; NULL for none.
      ALTER TABLE webhook_messages ADD COLUMN trace_parent TEXT;
    `,
  },
];

/** The version of the schema in `db`, or undefined when it holds no table of versions: no store of this service. */
export function schemaVersion(db: Database.Database): number | undefined {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (table === undefined) return undefined;
  return (db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null }).version ?? 0;
}

/** Migrates to the newest version in one IMMEDIATE transaction, the table of versions made inside it: two processes cannot both apply a step. */
export function migrate(db: Database.Database, steps: readonly Migration[] = migrations): SchemaChange {
  const apply = db.transaction((): SchemaChange => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`);
    const from = (db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null }).version ?? 0;
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const pending = pendingSteps(steps, from);
    for (const step of pending) {
      db.exec(step.sql);
      record.run(step.version, step.name, Date.now());
    }
    return { from, to: pending.at(-1)?.version ?? from };
  });
  return apply.immediate();
}
