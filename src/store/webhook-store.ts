import type { NewPlant } from '../plants/plant.js';

/**
 * The webhook half of a store: subscriptions and the outbox. `Store.createPlants` writes a plant's messages in its batch's own
 * transaction, so a committed plant always has them and an uncommitted one has none; what is here reads and settles them.
 * Several processes may share a store: a claim leases a message, so one process at a time delivers it and one that dies leaves it to
 * the next claim after the lease; the attempt number fences the settlement against a process whose lease was taken over.
 */
export interface WebhookStore {
  /** Stores a new, active subscription; unless `allowDuplicate`, an active one with the same URL (as stored) is kept instead, its id resolved. */
  addSubscription(subscription: NewSubscription, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number }>;

  /** Every active subscription with its counts, oldest first. */
  listSubscriptions(): Promise<SubscriptionSummary[]>;

  /** Changes an active subscription's URL and description; pending messages follow from the next turn. A duplicate URL is refused as an add's is. */
  updateSubscription(change: SubscriptionChange, allowDuplicate: boolean): Promise<Subscription | { duplicateOf: number } | undefined>;

  /**
   * Pauses or resumes a subscription. While paused, messages are written and kept but none is claimed; a resume restarts its pending
   * messages' retry window from now. Resolves false when already in that state, undefined when no active subscription has this id.
   */
  setPaused(id: number, paused: boolean): Promise<boolean | undefined>;

  /** The subscription's messages, newest first, at most `limit`, only those in `state` when given. */
  listMessages(query: { subscriptionId: number; state?: MessageState; limit: number }): Promise<OutboxMessage[]>;

  /**
   * Queues finished messages again: every failed one of the subscription, or the one numbered `messageId`. Each keeps its number, so its
   * `webhook-id`; its attempts restart from 0, its retry window from now, and it is due at once; a pending one is left as it is. Delivered
   * and failed counts drop by those queued (they count latest outcomes). Resolves how many were queued, and how many were pending already.
   * Restarting attempts keeps the fence whole: a finished message has no lease, and a late outcome must match the new claim's owner too.
   */
  resendMessages(selection: { subscriptionId: number; messageId?: bigint }): Promise<{ queued: number; pending: number }>;

  /** The active subscriptions (paused ones too) with their secrets, for signing deliveries. */
  activeSubscriptions(): Promise<Subscription[]>;

  /** Deactivates a subscription and drops its pending messages in one transaction: nothing is claimed for it after. */
  removeSubscription(id: number): Promise<boolean>;

  /**
   * In one transaction: makes `secret` the secret, retires the current one until `retiredUntil`, and deletes those ended by `now`.
   * Refused, changing nothing, when `mostRetired` retired secrets are live at `now`: resolves when the oldest of them ends.
   */
  rotateSecret(rotation: SecretRotation): Promise<Subscription | { liveUntil: Date } | undefined>;

  /** Leases up to `limit` due messages to `owner` for `leaseMs`, oldest due first, counting an attempt each; none of a paused subscription. */
  claimMessages(claim: { subscriptionId: number; owner: string; limit: number; leaseMs: number }): Promise<ClaimedMessage[]>;

  /**
   * Records outcomes in one transaction; one whose claim is not the message's latest (same owner and attempt) changes nothing.
   * A `released` claim was never attempted: the message is due again at once, its attempt uncounted.
   */
  settleMessages(owner: string, settlements: readonly Settlement[]): Promise<void>;

  /** Deletes messages finished before `before`, and pending ones of removed subscriptions; resolves how many. */
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
  /** Random, per subscription: message ids are `msg_<key>_<number>`, so a store made anew never repeats an id a receiver saw. */
  key: string;
  createdAt: Date;
}

export interface Subscription extends NewSubscription {
  id: number;
  pausedAt: Date | null;
  /** Oldest first; each signs beside `secret` until its `until`, and one that ended may stay listed until the next rotation. */
  retiredSecrets: RetiredSecret[];
}

export interface RetiredSecret {
  secret: string;
  until: Date;
}

export interface SecretRotation {
  id: number;
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
  pending: number;
  delivered: number;
  /** Messages that ran out of retries. */
  failed: number;
  lastError: string | null;
  lastErrorAt: Date | null;
  lastDeliveredAt: Date | null;
}

export type MessageState = 'pending' | 'delivered' | 'failed';

export interface OutboxMessage {
  /** The end of its `webhook-id`; null for a pending message still packed in webhook_batches, numbered when first claimed. */
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
  id: bigint;
  subscriptionId: number;
  /** This claim's attempt, from 1. */
  attempt: number;
  createdAt: Date;
  /** Where its retry window starts: `createdAt`, or when a resend or a resume last queued it again. */
  queuedAt: Date;
  plant: NewPlant;
  /** The W3C `traceparent` of the create that made it, for its deliveries to continue that trace. */
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

/** The listeners of `onMessagesWritten`: the plant batch tells them after each commit that wrote messages. */
export class MessagesWritten {
  readonly #listeners: (() => void)[] = [];

  add(listener: () => void): void {
    this.#listeners.push(listener);
  }

  readonly tell = (): void => {
    for (const listener of this.#listeners) listener();
  };
}
