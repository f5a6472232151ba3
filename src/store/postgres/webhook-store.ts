import type pg from 'pg';
import type { Connections } from './primary-pool.js';
import { plantFromRow } from '../store.js';
import {
  type ClaimedMessage,
  type MessageState,
  type NewSubscription,
  type OutboxMessage,
  type SecretRotation,
  type Settlement,
  type Subscription,
  type SubscriptionChange,
  type SubscriptionSummary,
  type WebhookStore,
  MessagesWritten,
} from '../webhook-store.js';
import { translateErrors } from './errors.js';
import { preparedStatement, type PreparedStatements } from './prepared-statements.js';
import { CLAIM_MESSAGES } from './webhook-claim.js';
import { SETTLE_MESSAGES, settlementValues } from './webhook-settle.js';
import { listMessages, resendMessages } from './webhook-messages.js';
import { inTransaction } from './transaction.js';

interface SubscriptionRow {
  id: string;
  url: string;
  description: string | null;
  secret: string;
  key: string;
  created_at: Date;
  paused_at: Date | null;
  /** `[secret, valid_until in ms]` of each retired secret. */
  retired_secrets: [string, number][];
}

/** A subscription's retired secrets as one JSON column, so that the subscriptions are read in one statement. */
const RETIRED_SECRETS = `coalesce((SELECT json_agg(json_build_array(r.secret, (extract(epoch FROM r.valid_until) * 1000)::bigint))
                                      FROM webhook_retired_secrets r WHERE r.subscription_id = s.id), '[]') AS retired_secrets`;

/** The pending messages of subscription `s`: the numbered ones and those still packed in their batch. */
const PENDING_OF_S = `((SELECT count(*) FROM webhook_messages m WHERE m.subscription_id = s.id AND m.state = 'pending')
                     + (SELECT coalesce(sum(cardinality(b.plant_ids)), 0) FROM webhook_batches b WHERE b.subscription_id = s.id))`;

/**
 * Columns named rather than `s.*`: a prepared statement whose result type changes (a column added by a newer
 * version's migration) fails until its connection ends.
 */
export const ACTIVE_SUBSCRIPTIONS_STATEMENT = preparedStatement(
  'active_subscriptions',
  `SELECT s.id, s.url, s.description, s.secret, s.key, s.created_at, s.paused_at, ${RETIRED_SECRETS}
     FROM webhook_subscriptions s WHERE s.removed_at IS NULL ORDER BY s.id`,
);
export const CLAIM_STATEMENT = preparedStatement('claim_messages', CLAIM_MESSAGES);
export const SETTLE_STATEMENT = preparedStatement('settle_messages', SETTLE_MESSAGES);

/** Any constant does: adds and URL changes take turns on it, so two of one URL cannot both find it free. */
const ADD_LOCK = 8100956956760700016n;

/**
 * The outbox on PostgreSQL: autocommit statements but for an add, an update and a rotation, each a short
 * transaction, so it works behind PgBouncer in transaction mode. Due times and leases use the database's
 * clock (`now()`), the one every instance shares; a claim skips rows another is claiming (`SKIP LOCKED`).
 */
export class PostgresWebhookStore implements WebhookStore {
  readonly #pool: Connections;
  readonly #prepared: PreparedStatements;
  readonly #written: MessagesWritten;

  constructor(pool: Connections, prepared: PreparedStatements, written: MessagesWritten) {
    this.#pool = pool;
    this.#written = written;
    this.#prepared = prepared;
  }

  onMessagesWritten(listener: () => void): void {
    this.#written.add(listener);
  }

  async addSubscription(subscription: NewSubscription, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number }> {
    return this.#inTransaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [ADD_LOCK]);
      if (!allowDuplicate) {
        const { rows } = await client.query<{ id: string }>(
          'SELECT id FROM webhook_subscriptions WHERE url = $1 AND removed_at IS NULL ORDER BY id LIMIT 1',
          [subscription.url],
        );
        if (rows[0] !== undefined) return { duplicateOf: Number(rows[0].id) };
      }
      const { rows } = await client.query<SubscriptionRow>(
        `INSERT INTO webhook_subscriptions (url, description, secret, key, created_at) VALUES ($1, $2, $3, $4, $5)
         RETURNING *, '[]'::json AS retired_secrets`,
        [subscription.url, subscription.description, subscription.secret, subscription.key, subscription.createdAt],
      );
      return toSubscription(rows[0]!);
    });
  }

  async listSubscriptions(): Promise<SubscriptionSummary[]> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<{
        id: string;
        url: string;
        description: string | null;
        created_at: Date;
        paused_at: Date | null;
        pending: string;
        delivered: string;
        failed: string;
        last_error: string | null;
        last_error_at: Date | null;
        last_delivered_at: Date | null;
      }>(
        `SELECT s.id, s.url, s.description, s.created_at, s.paused_at, s.delivered, s.failed, s.last_error, s.last_error_at, s.last_delivered_at,
                ${PENDING_OF_S} AS pending
           FROM webhook_subscriptions s WHERE s.removed_at IS NULL ORDER BY s.id`,
      );
      return rows.map((row) => ({
        id: Number(row.id),
        url: row.url,
        description: row.description,
        createdAt: row.created_at,
        pausedAt: row.paused_at,
        pending: Number(row.pending),
        delivered: Number(row.delivered),
        failed: Number(row.failed),
        lastError: row.last_error,
        lastErrorAt: row.last_error_at,
        lastDeliveredAt: row.last_delivered_at,
      }));
    });
  }

  async updateSubscription({ id, url, description }: SubscriptionChange, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number } | undefined> {
    return this.#inTransaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [ADD_LOCK]);
      const found = await client.query('SELECT 1 FROM webhook_subscriptions WHERE id = $1 AND removed_at IS NULL FOR UPDATE', [id]);
      if (found.rowCount === 0) return undefined;
      if (!allowDuplicate) {
        const { rows } = await client.query<{ id: string }>(
          'SELECT id FROM webhook_subscriptions WHERE url = $1 AND removed_at IS NULL AND id <> $2 ORDER BY id LIMIT 1',
          [url, id],
        );
        if (rows[0] !== undefined) return { duplicateOf: Number(rows[0].id) };
      }
      const { rows } = await client.query<SubscriptionRow>(
        `UPDATE webhook_subscriptions AS s SET url = $2, description = CASE WHEN $4 THEN $3 ELSE s.description END
          WHERE s.id = $1 RETURNING s.*, ${RETIRED_SECRETS}`,
        [id, url, description ?? null, description !== undefined],
      );
      return toSubscription(rows[0]!);
    });
  }

  async setPaused(id: number, paused: boolean): Promise<boolean | undefined> {
    return translateErrors(async () => {
      // One statement: a resume and the new retry window of the messages it lets go commit together.
      const { rows } = await this.#pool.query<{ found: boolean; changed: boolean }>(
        `WITH target AS (
           SELECT id, paused_at FROM webhook_subscriptions WHERE id = $1 AND removed_at IS NULL
         ), changed AS (
           UPDATE webhook_subscriptions AS s SET paused_at = CASE WHEN $2 THEN now() END
             FROM target AS t WHERE s.id = t.id AND (t.paused_at IS NULL) = $2 RETURNING s.id
         ), requeued AS (
           UPDATE webhook_messages SET requeued_at = now()
            WHERE NOT $2 AND subscription_id IN (SELECT id FROM changed) AND state = 'pending'
         ), requeued_batches AS (
           UPDATE webhook_batches SET requeued_at = now() WHERE NOT $2 AND subscription_id IN (SELECT id FROM changed)
         )
         SELECT EXISTS (SELECT 1 FROM target) AS found, EXISTS (SELECT 1 FROM changed) AS changed`,
        [id, paused],
      );
      return rows[0]!.found ? rows[0]!.changed : undefined;
    });
  }

  async listMessages(query: { subscriptionId: number; state?: MessageState; limit: number }): Promise<OutboxMessage[]> {
    return translateErrors(() => listMessages(this.#pool, query));
  }

  async resendMessages(selection: { subscriptionId: number; messageId?: bigint }): Promise<{ queued: number; pending: number }> {
    return translateErrors(() => resendMessages(this.#pool, selection));
  }

  async activeSubscriptions(): Promise<Subscription[]> {
    return translateErrors(async () => {
      const { rows } = await this.#prepared.query<SubscriptionRow>(ACTIVE_SUBSCRIPTIONS_STATEMENT, []);
      return rows.map(toSubscription);
    });
  }

  async removeSubscription(id: number): Promise<boolean> {
    return translateErrors(async () => {
      // One statement, so one transaction: the subscription goes and its pending messages with it.
      const { rows } = await this.#pool.query<{ removed: boolean }>(
        `WITH removed AS (
           UPDATE webhook_subscriptions SET removed_at = now() WHERE id = $1 AND removed_at IS NULL RETURNING id
         ), dropped AS (
           DELETE FROM webhook_messages WHERE subscription_id IN (SELECT id FROM removed) AND state = 'pending'
         ), dropped_batches AS (
           DELETE FROM webhook_batches WHERE subscription_id IN (SELECT id FROM removed)
         ), retired AS (
           DELETE FROM webhook_retired_secrets WHERE subscription_id IN (SELECT id FROM removed)
         )
         SELECT EXISTS (SELECT 1 FROM removed) AS removed`,
        [id],
      );
      return rows[0]!.removed;
    });
  }

  async rotateSecret({ id, secret, retiredUntil, now, mostRetired }: SecretRotation): Promise<Subscription | { liveUntil: Date } | undefined> {
    return this.#inTransaction(async (client) => {
      // The lock on the subscription makes rotations of it take turns, so each counts the secrets the one before retired.
      const locked = await client.query('SELECT 1 FROM webhook_subscriptions WHERE id = $1 AND removed_at IS NULL FOR UPDATE', [id]);
      if (locked.rowCount === 0) return undefined;
      const { rows: [live] } = await client.query<{ live: string; oldest: Date | null }>(
        'SELECT count(*) AS live, min(valid_until) AS oldest FROM webhook_retired_secrets WHERE subscription_id = $1 AND valid_until > $2',
        [id, now],
      );
      if (Number(live!.live) >= mostRetired) return { liveUntil: live!.oldest! };
      const { rows } = await client.query<SubscriptionRow>(
        `WITH retired AS (
           INSERT INTO webhook_retired_secrets (subscription_id, secret, valid_until) SELECT id, secret, $2 FROM webhook_subscriptions WHERE id = $1
         ), pruned AS (
           DELETE FROM webhook_retired_secrets WHERE subscription_id = $1 AND valid_until <= $3
         )
         UPDATE webhook_subscriptions SET previous_secret = secret, previous_secret_until = $2, secret = $4 WHERE id = $1 RETURNING *`,
        [id, retiredUntil, now, secret],
      );
      // The statement's own changes to the retired secrets are not visible to it: they are read after.
      const { rows: [retired] } = await client.query<Pick<SubscriptionRow, 'retired_secrets'>>(
        `SELECT ${RETIRED_SECRETS} FROM webhook_subscriptions s WHERE s.id = $1`,
        [id],
      );
      return toSubscription({ ...rows[0]!, retired_secrets: retired!.retired_secrets });
    });
  }

  async claimMessages({ subscriptionId, owner, limit, leaseMs }: { subscriptionId: number; owner: string; limit: number; leaseMs: number }): Promise<ClaimedMessage[]> {
    return translateErrors(async () => {
      const { rows } = await this.#prepared.query<{
        id: string;
        attempts: number;
        created_at: Date;
        requeued_at: Date | null;
        plant_id: string;
        name: string;
        tag: string | null;
        trace_parent: string | null;
      }>(CLAIM_STATEMENT, [subscriptionId, owner, limit, leaseMs]);
      // RETURNING follows no order; the oldest message goes first.
      rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
      return rows.map((row) => ({
        id: BigInt(row.id),
        subscriptionId,
        attempt: row.attempts,
        createdAt: row.created_at,
        queuedAt: row.requeued_at ?? row.created_at,
        plant: plantFromRow(BigInt(row.plant_id), row.name, row.tag),
        traceParent: row.trace_parent,
      }));
    });
  }

  async settleMessages(owner: string, settlements: readonly Settlement[]): Promise<void> {
    if (settlements.length === 0) return;
    await translateErrors(async () => {
      await this.#prepared.query(SETTLE_STATEMENT, settlementValues(owner, settlements));
    });
  }

  async pruneMessages(before: Date): Promise<number> {
    return translateErrors(async () => {
      // Messages of removed subscriptions are late ones (see migration 2), packed or not.
      const { rows } = await this.#pool.query<{ pruned: string }>(
        `WITH removed AS (
           SELECT id FROM webhook_subscriptions WHERE removed_at IS NOT NULL
         ), messages AS (
           DELETE FROM webhook_messages
            WHERE (state <> 'pending' AND finished_at < $1) OR (state = 'pending' AND subscription_id IN (SELECT id FROM removed))
           RETURNING 1 AS messages
         ), batches AS (
           DELETE FROM webhook_batches WHERE subscription_id IN (SELECT id FROM removed) RETURNING cardinality(plant_ids) AS messages
         )
         SELECT (SELECT count(*) FROM messages) + (SELECT coalesce(sum(messages), 0) FROM batches) AS pruned`,
        [before],
      );
      return Number(rows[0]!.pruned);
    });
  }

  #inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return translateErrors(() => inTransaction(this.#pool, work));
  }

  async backlog(): Promise<{ subscriptionId: number; paused: boolean; pending: number; oldestCreatedAt: Date | null }[]> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<{ subscription_id: string; paused: boolean; pending: string; oldest: Date | null }>(
        `SELECT s.id AS subscription_id, s.paused_at IS NOT NULL AS paused, ${PENDING_OF_S} AS pending,
                least((SELECT min(m.created_at) FROM webhook_messages m WHERE m.subscription_id = s.id AND m.state = 'pending'),
                      (SELECT min(b.created_at) FROM webhook_batches b WHERE b.subscription_id = s.id)) AS oldest
           FROM webhook_subscriptions s WHERE s.removed_at IS NULL`,
      );
      return rows.map((row) => ({ subscriptionId: Number(row.subscription_id), paused: row.paused, pending: Number(row.pending), oldestCreatedAt: row.oldest }));
    });
  }
}

function toSubscription(row: SubscriptionRow): Subscription {
  return {
    id: Number(row.id),
    url: row.url,
    description: row.description,
    secret: row.secret,
    key: row.key,
    pausedAt: row.paused_at,
    retiredSecrets: row.retired_secrets.map(([secret, until]) => ({ secret, until: new Date(Number(until)) })).sort((a, b) => a.until.getTime() - b.until.getTime()),
    createdAt: row.created_at,
  };
}
