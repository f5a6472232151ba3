import type Database from 'better-sqlite3';
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
import { type PlantRow, toNewPlant } from './plant-batch.js';
import { listMessages, resendMessages } from './webhook-messages.js';
import { BatchUnpacker, type ClaimedRow } from './webhook-unpack.js';

interface SubscriptionRow {
  id: number;
  url: string;
  description: string | null;
  secret: string;
  key: string;
  created_at: number;
  paused_at: number | null;
  /** JSON: `[secret, valid_until]` of each retired secret. */
  retired_secrets: string;
}

/** A subscription's retired secrets as one JSON column, so that the subscriptions are read in one statement. */
const RETIRED_SECRETS = `(SELECT json_group_array(json_array(r.secret, r.valid_until)) FROM webhook_retired_secrets r
                           WHERE r.subscription_id = s.id) AS retired_secrets`;

interface SummaryRow {
  id: number;
  url: string;
  description: string | null;
  created_at: number;
  paused_at: number | null;
  pending: number;
  delivered: number;
  failed: number;
  last_error: string | null;
  last_error_at: number | null;
  last_delivered_at: number | null;
}

/**
 * The outbox on SQLite. Claims and settlements use a connection with synchronous=NORMAL: in WAL mode such a commit survives kill -9
 * and is lost only with the power, and a lost one only means a message is delivered again, which at-least-once allows.
 * Times are this machine's milliseconds: every process on one SQLite file runs on one machine.
 */
export class SqliteWebhookStore implements WebhookStore {
  readonly #db: Database.Database;
  readonly #written: MessagesWritten;
  readonly #statements;
  readonly #unpacker: BatchUnpacker;

  constructor(db: Database.Database, written: MessagesWritten) {
    this.#db = db;
    this.#written = written;
    this.#unpacker = new BatchUnpacker(db);
    this.#statements = {
      insert: db.prepare(
        `INSERT INTO webhook_subscriptions (url, description, secret, key, created_at) VALUES (?, ?, ?, ?, ?) RETURNING *, '[]' AS retired_secrets`,
      ),
      activeWithUrl: db.prepare('SELECT id FROM webhook_subscriptions WHERE url = ? AND removed_at IS NULL AND id <> ? ORDER BY id LIMIT 1'),
      update: db.prepare('UPDATE webhook_subscriptions SET url = ?, description = iif(?, ?, description) WHERE id = ? AND removed_at IS NULL'),
      pause: db.prepare('UPDATE webhook_subscriptions SET paused_at = ? WHERE id = ? AND removed_at IS NULL AND paused_at IS NULL'),
      resume: db.prepare('UPDATE webhook_subscriptions SET paused_at = NULL WHERE id = ? AND removed_at IS NULL AND paused_at IS NOT NULL'),
      requeuePending: db.prepare(`UPDATE webhook_messages SET requeued_at = ? WHERE subscription_id = ? AND state = 'pending'`),
      requeueBatches: db.prepare('UPDATE webhook_batches SET requeued_at = ? WHERE subscription_id = ?'),
      isPaused: db.prepare('SELECT paused_at IS NOT NULL FROM webhook_subscriptions WHERE id = ?').pluck(),
      active: db.prepare(`SELECT s.*, ${RETIRED_SECRETS} FROM webhook_subscriptions s WHERE s.removed_at IS NULL ORDER BY s.id`),
      activeById: db.prepare(`SELECT s.*, ${RETIRED_SECRETS} FROM webhook_subscriptions s WHERE s.id = ? AND s.removed_at IS NULL`),
      summaries: db.prepare(
        `SELECT s.id, s.url, s.description, s.created_at, s.paused_at, s.delivered, s.failed, s.last_error, s.last_error_at, s.last_delivered_at,
                (SELECT count(*) FROM webhook_messages m WHERE m.subscription_id = s.id AND m.state = 'pending')
                  + (SELECT coalesce(sum(b.plants), 0) FROM webhook_batches b WHERE b.subscription_id = s.id) AS pending
           FROM webhook_subscriptions s WHERE s.removed_at IS NULL ORDER BY s.id`,
      ),
      remove: db.prepare('UPDATE webhook_subscriptions SET removed_at = ? WHERE id = ? AND removed_at IS NULL'),
      dropPending: db.prepare(`DELETE FROM webhook_messages WHERE subscription_id = ? AND state = 'pending'`),
      dropBatches: db.prepare('DELETE FROM webhook_batches WHERE subscription_id = ?'),
      dropRetired: db.prepare('DELETE FROM webhook_retired_secrets WHERE subscription_id = ?'),
      liveRetired: db.prepare(
        'SELECT count(*) AS live, min(valid_until) AS oldest FROM webhook_retired_secrets WHERE subscription_id = ? AND valid_until > ?',
      ),
      retire: db.prepare(
        'INSERT INTO webhook_retired_secrets (subscription_id, secret, valid_until) SELECT id, secret, ? FROM webhook_subscriptions WHERE id = ?',
      ),
      rotate: db.prepare('UPDATE webhook_subscriptions SET previous_secret = secret, previous_secret_until = ?, secret = ? WHERE id = ?'),
      pruneRetired: db.prepare('DELETE FROM webhook_retired_secrets WHERE subscription_id = ? AND valid_until <= ?'),
      claim: db
        .prepare(
          `UPDATE webhook_messages SET next_attempt_at = ?, lease_owner = ?, attempts = attempts + 1
            WHERE id IN (SELECT id FROM webhook_messages
                          WHERE subscription_id = ? AND state = 'pending' AND next_attempt_at <= ?
                          ORDER BY next_attempt_at, id LIMIT ?)
            RETURNING id, plant_id, attempts, created_at, requeued_at, trace_parent`,
        )
        .safeIntegers(true),
      plant: db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true),
      delivered: db.prepare(
        `UPDATE webhook_messages SET state = 'delivered', finished_at = ?, last_result = ?, lease_owner = NULL
          WHERE id = ? AND lease_owner = ? AND attempts = ? AND state = 'pending'`,
      ),
      retry: db.prepare(
        `UPDATE webhook_messages SET next_attempt_at = ?, last_result = ?, lease_owner = NULL
          WHERE id = ? AND lease_owner = ? AND attempts = ? AND state = 'pending'`,
      ),
      failed: db.prepare(
        `UPDATE webhook_messages SET state = 'failed', finished_at = ?, last_result = ?, lease_owner = NULL
          WHERE id = ? AND lease_owner = ? AND attempts = ? AND state = 'pending'`,
      ),
      release: db.prepare(
        `UPDATE webhook_messages SET next_attempt_at = ?, attempts = attempts - 1, lease_owner = NULL
          WHERE id = ? AND lease_owner = ? AND attempts = ? AND state = 'pending'`,
      ),
      countDelivered: db.prepare('UPDATE webhook_subscriptions SET delivered = delivered + ?, last_delivered_at = ? WHERE id = ?'),
      countFailed: db.prepare('UPDATE webhook_subscriptions SET failed = failed + ? WHERE id = ?'),
      lastError: db.prepare('UPDATE webhook_subscriptions SET last_error = ?, last_error_at = ? WHERE id = ?'),
      pruneFinished: db.prepare(`DELETE FROM webhook_messages WHERE state <> 'pending' AND finished_at < ?`),
      pruneOrphans: db.prepare(
        `DELETE FROM webhook_messages WHERE state = 'pending'
            AND subscription_id IN (SELECT id FROM webhook_subscriptions WHERE removed_at IS NOT NULL)`,
      ),
      pruneOrphanBatches: db.prepare(
        'DELETE FROM webhook_batches WHERE subscription_id IN (SELECT id FROM webhook_subscriptions WHERE removed_at IS NOT NULL)',
      ),
      backlog: db.prepare(
        `SELECT s.id AS subscription_id, s.paused_at IS NOT NULL AS paused,
                (SELECT count(*) FROM webhook_messages m WHERE m.subscription_id = s.id AND m.state = 'pending')
                  + (SELECT coalesce(sum(b.plants), 0) FROM webhook_batches b WHERE b.subscription_id = s.id) AS pending,
                (SELECT min(created_at) FROM (SELECT m.created_at FROM webhook_messages m WHERE m.subscription_id = s.id AND m.state = 'pending'
                                               UNION ALL SELECT b.created_at FROM webhook_batches b WHERE b.subscription_id = s.id)) AS oldest
           FROM webhook_subscriptions s WHERE s.removed_at IS NULL`,
      ),
    };
  }

  onMessagesWritten(listener: () => void): void {
    this.#written.add(listener);
  }

  async addSubscription(subscription: NewSubscription, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number }> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        const existing = allowDuplicate ? undefined : (this.#statements.activeWithUrl.get(subscription.url, 0) as { id: number } | undefined);
        if (existing !== undefined) return { duplicateOf: existing.id };
        const row = this.#statements.insert.get(
          subscription.url,
          subscription.description,
          subscription.secret,
          subscription.key,
          subscription.createdAt.getTime(),
        ) as SubscriptionRow;
        return toSubscription(row);
      }),
    );
  }

  async listSubscriptions(): Promise<SubscriptionSummary[]> {
    return translateErrors(() =>
      (this.#statements.summaries.all() as SummaryRow[]).map((row) => ({
        id: row.id,
        url: row.url,
        description: row.description,
        createdAt: new Date(row.created_at),
        pausedAt: row.paused_at === null ? null : new Date(row.paused_at),
        pending: row.pending,
        delivered: row.delivered,
        failed: row.failed,
        lastError: row.last_error,
        lastErrorAt: row.last_error_at === null ? null : new Date(row.last_error_at),
        lastDeliveredAt: row.last_delivered_at === null ? null : new Date(row.last_delivered_at),
      })),
    );
  }

  async updateSubscription({ id, url, description }: SubscriptionChange, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number } | undefined> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        if (this.#statements.activeById.get(id) === undefined) return undefined;
        const existing = allowDuplicate ? undefined : (this.#statements.activeWithUrl.get(url, id) as { id: number } | undefined);
        if (existing !== undefined) return { duplicateOf: existing.id };
        this.#statements.update.run(url, description === undefined ? 0 : 1, description ?? null, id);
        return toSubscription(this.#statements.activeById.get(id) as SubscriptionRow);
      }),
    );
  }

  async setPaused(id: number, paused: boolean): Promise<boolean | undefined> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        if (this.#statements.activeById.get(id) === undefined) return undefined;
        const now = Date.now();
        if (paused) return this.#statements.pause.run(now, id).changes === 1;
        if (this.#statements.resume.run(id).changes === 0) return false;
        this.#statements.requeuePending.run(now, id);
        this.#statements.requeueBatches.run(now, id);
        return true;
      }),
    );
  }

  async listMessages(query: { subscriptionId: number; state?: MessageState; limit: number }): Promise<OutboxMessage[]> {
    // One read transaction: the batches and the messages seen at one moment, no message counted in both.
    return translateErrors(() => this.#db.transaction(() => listMessages(this.#db, query)).deferred());
  }

  async resendMessages(selection: { subscriptionId: number; messageId?: bigint }): Promise<{ queued: number; pending: number }> {
    return translateErrors(() => this.#inTransaction(() => resendMessages(this.#db, selection, Date.now())));
  }

  async activeSubscriptions(): Promise<Subscription[]> {
    return translateErrors(() => (this.#statements.active.all() as SubscriptionRow[]).map(toSubscription));
  }

  async removeSubscription(id: number): Promise<boolean> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        if (this.#statements.remove.run(Date.now(), id).changes === 0) return false;
        this.#statements.dropPending.run(id);
        this.#statements.dropBatches.run(id);
        this.#statements.dropRetired.run(id);
        return true;
      }),
    );
  }

  async rotateSecret({ id, secret, retiredUntil, now, mostRetired }: SecretRotation): Promise<Subscription | { liveUntil: Date } | undefined> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        if (this.#statements.activeById.get(id) === undefined) return undefined;
        const { live, oldest } = this.#statements.liveRetired.get(id, now.getTime()) as { live: number; oldest: number | null };
        if (live >= mostRetired) return { liveUntil: new Date(oldest!) };
        this.#statements.retire.run(retiredUntil.getTime(), id);
        this.#statements.rotate.run(retiredUntil.getTime(), secret, id);
        this.#statements.pruneRetired.run(id, now.getTime());
        return toSubscription(this.#statements.activeById.get(id) as SubscriptionRow);
      }),
    );
  }

  async claimMessages({ subscriptionId, owner, limit, leaseMs }: { subscriptionId: number; owner: string; limit: number; leaseMs: number }): Promise<ClaimedMessage[]> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        // Read in the claim's IMMEDIATE transaction: once a pause commits, no claim for it starts.
        if (this.#statements.isPaused.get(subscriptionId) === 1) return [];
        const now = Date.now();
        const claimed = this.#statements.claim.all(now + leaseMs, owner, subscriptionId, now, limit) as ClaimedRow[];
        // Then packed messages, as many as the claim still wants (webhook-unpack.ts).
        if (claimed.length < limit) this.#unpacker.unpack(subscriptionId, { owner, leaseEndsAt: now + leaseMs, wanted: limit - claimed.length, into: claimed });
        return claimed.map(
          (row): ClaimedMessage => ({
            id: row.id,
            subscriptionId,
            attempt: Number(row.attempts),
            createdAt: new Date(Number(row.created_at)),
            queuedAt: new Date(Number(row.requeued_at ?? row.created_at)),
            plant: toNewPlant(this.#statements.plant.get(row.plant_id) as PlantRow),
            traceParent: row.trace_parent,
          }),
        );
      }),
    );
  }

  async settleMessages(owner: string, settlements: readonly Settlement[]): Promise<void> {
    if (settlements.length === 0) return;
    translateErrors(() =>
      this.#inTransaction(() => {
        const now = Date.now();
        const counts = new Map<number, { delivered: number; failed: number }>();
        const countOf = (id: number) => counts.get(id) ?? counts.set(id, { delivered: 0, failed: 0 }).get(id)!;
        for (const settlement of settlements) {
          const key = [settlement.messageId, owner, settlement.attempt] as const;
          switch (settlement.outcome) {
            case 'delivered':
              if (this.#statements.delivered.run(now, settlement.answer, ...key).changes === 1) countOf(settlement.subscriptionId).delivered += 1;
              break;
            case 'retry':
              this.#statements.retry.run(now + settlement.retryInMs, settlement.error, ...key);
              this.#statements.lastError.run(settlement.error, now, settlement.subscriptionId);
              break;
            case 'failed':
              if (this.#statements.failed.run(now, settlement.error, ...key).changes === 1) countOf(settlement.subscriptionId).failed += 1;
              this.#statements.lastError.run(settlement.error, now, settlement.subscriptionId);
              break;
            case 'released':
              this.#statements.release.run(now, ...key);
              break;
          }
        }
        for (const [id, { delivered, failed }] of counts) {
          if (delivered > 0) this.#statements.countDelivered.run(delivered, now, id);
          if (failed > 0) this.#statements.countFailed.run(failed, id);
        }
      }),
    );
  }

  async pruneMessages(before: Date): Promise<number> {
    return translateErrors(() =>
      this.#inTransaction(() => {
        this.#statements.pruneOrphanBatches.run();
        return this.#statements.pruneFinished.run(before.getTime()).changes + this.#statements.pruneOrphans.run().changes;
      }),
    );
  }

  async backlog(): Promise<{ subscriptionId: number; paused: boolean; pending: number; oldestCreatedAt: Date | null }[]> {
    return translateErrors(() =>
      (this.#statements.backlog.all() as { subscription_id: number; paused: number; pending: number; oldest: number | null }[]).map((row) => ({
        subscriptionId: row.subscription_id,
        paused: row.paused === 1,
        pending: row.pending,
        oldestCreatedAt: row.oldest === null ? null : new Date(row.oldest),
      })),
    );
  }

  #inTransaction<T>(work: () => T): T {
    return this.#db.transaction(work).immediate();
  }
}

function toSubscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    secret: row.secret,
    key: row.key,
    pausedAt: row.paused_at === null ? null : new Date(row.paused_at),
    retiredSecrets: (JSON.parse(row.retired_secrets) as [string, number][])
      .map(([secret, until]) => ({ secret, until: new Date(until) }))
      .sort((a, b) => a.until.getTime() - b.until.getTime()),
    createdAt: new Date(row.created_at),
  };
}
