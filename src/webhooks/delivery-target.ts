import type { KeyObject } from 'node:crypto';
import type { Pool } from 'undici';
import type { ClaimedMessage, Subscription } from '../store/webhook-store.js';
import { receiverPool } from './post-message.js';
import { secretKey } from './signature.js';
import { signingSecrets } from './subscriptions.js';

/** A claimed message waiting in memory for a free slot, and when its claim's lease ends (this process's clock). */
export interface LeasedMessage {
  message: ClaimedMessage;
  leaseEndsAt: number;
}

/** Most messages one subscription holds claimed and unsent in this process. */
const MOST_QUEUED = 1024;
/** A subscription holds as many claimed messages as it delivered in this long, so that a claim is one transaction for many messages... */
const QUEUED_SECONDS = 0.25;
/** ...once that is at least this many: a slower one claims only for its free slots, as each attempt ends. */
const LEAST_QUEUED = 32;
const RATE_WINDOW_MS = 250;

/**
 * One subscription as a dispatcher delivers to it. Claimed messages wait here for a free slot, so a finished attempt starts
 * the next without a trip to the store; a fast receiver holds QUEUED_SECONDS' worth, a slow one none beyond its slots.
 */
export class DeliveryTarget {
  subscription: Subscription;
  url: URL;
  keys: KeyObject[];
  pool: Pool;
  inFlight = 0;
  readonly #connections: number;
  readonly #queue: LeasedMessage[] = [];
  #finished = 0;
  #rateSince: number;
  #rate = 0;

  constructor(subscription: Subscription, now: number, connections: number) {
    this.subscription = subscription;
    this.url = new URL(subscription.url);
    this.keys = keysOf(subscription, now);
    this.#connections = connections;
    this.pool = receiverPool(this.url, connections);
    this.#rateSince = now;
  }

  /** Takes the subscription as read this turn, in place; its keys too, so a retired secret stops signing within a turn of its window's end. */
  update(subscription: Subscription, now: number): void {
    this.subscription = subscription;
    if (subscription.url !== this.url.href) {
      const url = new URL(subscription.url);
      if (url.origin !== this.url.origin) {
        // The attempts in flight finish on the old connections, which close after them.
        closeAfterAttempts(this.pool);
        this.pool = receiverPool(url, this.#connections);
      }
      this.url = url;
    }
    this.keys = keysOf(subscription, now);
  }

  /** How many more messages to claim now: for its free slots, or, when it holds more, none until they run down to half. */
  wanted(concurrency: number, now: number): number {
    const elapsed = now - this.#rateSince;
    if (elapsed >= RATE_WINDOW_MS) {
      this.#rate = (this.#finished * 1000) / elapsed;
      this.#finished = 0;
      this.#rateSince = now;
    }
    const held = this.#queue.length + this.inFlight;
    const queued = Math.ceil(this.#rate * QUEUED_SECONDS);
    if (queued < LEAST_QUEUED) return Math.max(0, concurrency - held);
    const depth = concurrency + Math.min(MOST_QUEUED, queued);
    return held <= depth / 2 ? depth - held : 0;
  }

  hold(messages: readonly ClaimedMessage[], leaseEndsAt: number): void {
    for (const message of messages) this.#queue.push({ message, leaseEndsAt });
  }

  next(concurrency: number): LeasedMessage | undefined {
    return this.inFlight < concurrency ? this.#queue.shift() : undefined;
  }

  started(): void {
    this.inFlight += 1;
  }

  finished(): void {
    this.inFlight -= 1;
    this.#finished += 1;
  }

  retire(): void {
    closeAfterAttempts(this.pool);
  }

  takeAll(): LeasedMessage[] {
    return this.#queue.splice(0);
  }
}

function closeAfterAttempts(pool: Pool): void {
  // Closing only fails on a pool already closed or destroyed: nothing is left to close.
  pool.close().catch(() => undefined);
}

function keysOf(subscription: Subscription, now: number): KeyObject[] {
  return signingSecrets(subscription, now).map(secretKey);
}
