import type { NewPlant } from '../plants/plant.js';

/**
 * The webhook half of a store: subscriptions and the outbox of messages.
 *
 * Messages are not written here: `Store.createPlants` writes one message per
 * active subscription for every plant it newly creates, in the batch's own
 * transaction, so a committed plant always has its messages and a plant that
 * was not committed has none. What is here reads and settles them.
 *
 * Several processes may share one store (`serve --workers N`, several
 * instances on one PostgreSQL). A message is claimed with a lease: a claimed
 * message is not due again until the lease runs out, so one process at a time
 * delivers it, and one that dies mid-delivery leaves it to whoever claims it
 * after the lease. Each claim counts an attempt, and the attempt number
 * fences the settlement: a process whose lease was taken over cannot settle
 * the message any more.
 */
export interface WebhookStore {
  /**
   * Stores a new, active subscription. Unless `allowDuplicate`, an active
   * subscription with the same URL (compared as stored) is kept instead:
   * nothing is written, and it resolves that subscription's id.
   */
  addSubscription(subscription: NewSubscription, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number }>;

  /** Every active subscription with its counts, oldest first. */
  listSubscriptions(): Promise<SubscriptionSummary[]>;

  /**
   * Changes an active subscription's URL and description. Its pending
   * messages go to the new URL from the dispatchers' next turn. Unless
   * `allowDuplicate`, a URL that another active subscription has is refused,
   * changing nothing, as an add is. Resolves undefined when no active
   * subscription has this id.
   */
  updateSubscription(change: SubscriptionChange, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number } | undefined>;

  /**
   * Pauses (`paused` true) or resumes a subscription. While paused, messages
   * are still written for it and kept, and none is claimed. A resume gives
   * its pending messages their whole retry window again, from now, so that a
   * pause does not use it up. Resolves false when it already was in that
   * state, undefined when no active subscription has this id.
   */
  setPaused(id: number, paused: boolean): Promise<boolean | undefined>;

  /**
   * The subscription's messages, newest first, at most `limit`, only those
   * in `state` when given. Pruned messages are gone.
   */
  listMessages(query: { subscriptionId: number; state?: MessageState; limit: number }): Promise<OutboxMessage[]>;

  /**
   * Queues finished messages again: every failed one of the subscription,
   * or the one numbered `messageId` (failed or delivered). Each keeps its
   * number, so its `webhook-id`; its attempts start from 0 and its retry
   * window from now, and it is due at once. A pending message is left as it
   * is. The subscription's delivered and failed counts drop by those queued
   * again: they count messages by their latest outcome. Resolves how many
   * were queued, and how many of those asked for were pending already.
   *
   * Restarting the attempt count leaves the settlement fence whole: a
   * finished message has no lease, so only a new claim can settle it, and a
   * late outcome must match that claim's owner as well as its attempt.
   */
  resendMessages(selection: { subscriptionId: number; messageId?: bigint }): Promise<{ queued: number; pending: number }>;

  /** The active subscriptions (paused ones too) with their secrets, for signing deliveries. */
  activeSubscriptions(): Promise<Subscription[]>;

  /**
   * Deactivates a subscription and drops its pending messages in one
   * transaction: from then on nothing is claimed for it. Resolves false when
   * no active subscription has this id.
   */
  removeSubscription(id: number): Promise<boolean>;

  /**
   * In one transaction: makes `secret` the subscription's secret, retires the
   * current one until `retiredUntil`, and deletes the retired secrets whose
   * window ended by `now`. Refused, changing nothing, when `mostRetired`
   * retired secrets are still live at `now`: resolves when the oldest of
   * them ends. Resolves undefined when no active subscription has this id.
   */
  rotateSecret(rotation: SecretRotation): Promise<Subscription | { liveUntil: Date } | undefined>;

  /**
   * Leases up to `limit` of the subscription's due messages to `owner` for
   * `leaseMs`, oldest due first, counting one attempt each; resolves them
   * with their plants. Claims nothing for a paused subscription.
   */
  claimMessages(claim: { subscriptionId: number; owner: string; limit: number; leaseMs: number }): Promise<ClaimedMessage[]>;

  /**
   * Records the outcome of attempts, in one transaction. An outcome whose
   * claim is no longer the message's latest (same owner and attempt) changes
   * nothing. A `released` claim was never attempted: the message is due
   * again at once, its attempt uncounted, for whoever claims it next.
   */
  settleMessages(owner: string, settlements: readonly Settlement[]): Promise<void>;

  /**
   * Deletes delivered and failed messages finished before `before`, and
   * pending ones left behind by removed subscriptions; resolves how many.
   */
  pruneMessages(before: Date): Promise<number>;

  /** Pending messages and the creation time of the oldest, per active subscription (for metrics). */
  backlog(): Promise<{ subscriptionId: number; paused: boolean; pending: number; oldestCreatedAt: Date | null }[]>;

  /** Calls `listener` after each commit that wrote messages (in this process), so that delivery starts at once. */
  onMessagesWritten(listener: () => void): void;
}

export interface NewSubscription {
  url: string;
  description: string | null;
  /** `whsec_` and the base64 of the key (Standard Webhooks). */
  secret: string;
  /**
   * Random, made with the subscription: message ids are `msg_<key>_<number>`,
   * so that a store made anew never repeats an id a receiver has already seen.
   */
  key: string;
  createdAt: Date;
}

export interface Subscription extends NewSubscription {
  id: number;
  /** Since when it is paused (see `WebhookStore.setPaused`); null when active. */
  pausedAt: Date | null;
  /**
   * The secrets rotated out, oldest first. Each signs deliveries beside
   * `secret` until its own `until`; one whose window ended may still be
   * listed until the next rotation deletes it.
   */
  retiredSecrets: RetiredSecret[];
}

export interface RetiredSecret {
  secret: string;
  until: Date;
}

export interface SecretRotation {
  id: number;
  /** The new secret. */
  secret: string;
  /** When the secret it replaces stops signing. */
  retiredUntil: Date;
  now: Date;
  /** Most retired secrets live at once, the one retired now included. */
  mostRetired: number;
}

export interface SubscriptionChange {
  id: number;
  /** As stored: parsed and written back, as an add does. */
  url: string;
  /** Absent: the description is kept. */
  description?: string | null;
}

/** A subscription as `webhook list` shows it: never its secret. */
export interface SubscriptionSummary {
  id: number;
  url: string;
  description: string | null;
  createdAt: Date;
  pausedAt: Date | null;
  /** Messages waiting to be delivered. */
  pending: number;
  delivered: number;
  /** Messages that ran out of retries. */
  failed: number;
  lastError: string | null;
  lastErrorAt: Date | null;
  lastDeliveredAt: Date | null;
}

export type MessageState = 'pending' | 'delivered' | 'failed';

/** A message as `webhook messages` shows it. */
export interface OutboxMessage {
  /**
   * Its number, the end of its `webhook-id`. Null for a pending message
   * still held packed with its batch's (webhook_batches): it is
   * numbered when first claimed.
   */
  id: bigint | null;
  plantId: bigint;
  state: MessageState;
  /** Attempts since it was queued (or queued again by a resend). */
  attempts: number;
  createdAt: Date;
  /** Pending: when it is due, or, while an attempt holds it, when that attempt's lease ends. Null once finished. */
  nextAttemptAt: Date | null;
  finishedAt: Date | null;
  /** The last attempt's answer (`HTTP 204`) or error (`HTTP 500: ...`, `ECONNREFUSED`): the receiver's words, unescaped. */
  lastResult: string | null;
}

export interface ClaimedMessage {
  /** The message's own number, unique in this store. */
  id: bigint;
  subscriptionId: number;
  /** This claim's attempt, from 1. */
  attempt: number;
  /** When the plant, and so the message, was committed. */
  createdAt: Date;
  /** Where its retry window starts: `createdAt`, or when a resend or a resume last queued it again. */
  queuedAt: Date;
  plant: NewPlant;
  /**
   * The W3C `traceparent` of the create that made the message (see
   * `PlantBatchWriter.createPlants`), for its deliveries to continue that
   * trace; null when the create had none.
   */
  traceParent: string | null;
}

/** What became of one attempt of a claimed message. */
export type Settlement =
  /** `answer`: the 2xx status line, as `HTTP 204`. */
  | { messageId: bigint; subscriptionId: number; attempt: number; outcome: 'delivered'; answer: string }
  | { messageId: bigint; subscriptionId: number; attempt: number; outcome: 'retry'; retryInMs: number; error: string }
  | { messageId: bigint; subscriptionId: number; attempt: number; outcome: 'failed'; error: string }
  /** Claimed and never sent (the process stops, or the subscription was paused or removed meanwhile). */
  | { messageId: bigint; subscriptionId: number; attempt: number; outcome: 'released' };

/**
 * The listeners of a store's `onMessagesWritten`: its plant batch tells them
 * after each commit that wrote messages, its webhook store adds them.
 */
export class MessagesWritten {
  readonly #listeners: (() => void)[] = [];

  add(listener: () => void): void {
    this.#listeners.push(listener);
  }

  readonly tell = (): void => {
    for (const listener of this.#listeners) listener();
  };
}
