import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { ClaimedMessage, Settlement, WebhookStore } from '../store/webhook-store.js';
import { type AttemptResult, loadReceiverClient } from './post-message.js';
import { webhookId } from './message.js';
import { attemptDelivery } from './attempt-delivery.js';
import type { DeliverySpans } from '../tracing/delivery-spans.js';
import { DeliveryTarget, type LeasedMessage } from './delivery-target.js';

export interface DispatcherOptions {
  timeoutMs: number;
  /** The first retry's delay, and the least of any, in ms. */
  retryMinMs: number;
  retryMaxMs: number;
  /** How long after its plant's commit (or its latest resend or resume) a message is retried before it is failed, in ms. */
  retryForMs: number;
  /** Attempts in flight at once per subscription, in this process. */
  concurrency: number;
  retentionMs: number;
  pollMs: number;
}

export type AttemptOutcome = 'delivered' | 'retry' | 'failed';

/** Where a dispatcher counts its attempts: this process's metrics, or those of the server that started it (delivery-channel.ts). */
export interface DeliveryMetrics {
  /** One attempt's outcome; for a delivered one, the seconds from its plant's commit to the receiver's 2xx. */
  attempt(outcome: AttemptOutcome, latencySeconds?: number): void;
}
/** Most messages one claim takes for a subscription: a turn's store work stays short, whatever the backlog. */
const CLAIM_MOST = 256;
/** Outcomes wait at most this long for company before a turn records them, unless SETTLE_BATCH are waiting. */
const SETTLE_GAP_MS = 20;
const SETTLE_BATCH = 256;
/** A held message is sent only if its attempt can end this long before its lease does; otherwise it is released. */
const LEASE_MARGIN_MS = 500;

/**
 * Delivers the outbox's messages: woken when a server says it committed messages, and every `pollMs` for others'
 * messages, due retries and lapsed leases. A slow or failing subscription fills only its own slots.
 */
export class WebhookDispatcher {
  readonly #store: WebhookStore;
  readonly #options: DispatcherOptions;
  readonly #log: FastifyBaseLogger;
  readonly #metrics: DeliveryMetrics | undefined;
  readonly #spans: DeliverySpans | undefined;
  readonly #owner = `${hostname()}/${process.pid}/${randomUUID()}`;
  /** A claim holds a message this long: its wait for a slot (at most an attempt's timeout) and its attempt, so a live process never loses its lease mid-attempt. */
  readonly #leaseMs: number;
  readonly #targets = new Map<number, DeliveryTarget>();
  #settlements: Settlement[] = [];
  #inFlight = 0;
  #timer: NodeJS.Timeout | undefined;
  #scheduledAt = Infinity;
  #turn: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #lastPrune = 0;
  #whenIdle: (() => void)[] = [];
  /** Set when a stop's grace runs out and the attempts still in flight are cut. */
  #interrupted = false;

  constructor(store: WebhookStore, options: DispatcherOptions, log: FastifyBaseLogger, metrics?: DeliveryMetrics, spans?: DeliverySpans) {
    this.#store = store;
    this.#options = options;
    this.#log = log;
    this.#metrics = metrics;
    this.#spans = spans;
    this.#leaseMs = 2 * options.timeoutMs + 1000;
  }

  start(): void {
    this.wake();
  }

  /** Told that new messages were committed: looks at once if some subscription has room for them. */
  messagesWritten(): void {
    if (this.#roomForMessages()) this.wake();
  }

  // Whether new messages may be claimed: a subscription not read yet, or an active one with room. Otherwise a wake costs a
  // trip to the store for nothing; a subscription added or resumed meanwhile is found within WEBHOOK_POLL_MS.
  #roomForMessages(): boolean {
    if (this.#targets.size === 0) return true;
    const now = Date.now();
    for (const target of this.#targets.values()) {
      if (target.subscription.pausedAt === null && this.#claimable(target, now) > 0) return true;
    }
    return false;
  }

  /** Looks at the outbox after the I/O already waiting, or after the turn under way. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#turn !== undefined) {
      this.#again = true;
      return;
    }
    this.#schedule(0);
  }

  #schedule(delayMs: number): void {
    const at = Date.now() + delayMs;
    if (this.#stopped || this.#turn !== undefined || (this.#timer !== undefined && this.#scheduledAt <= at)) return;
    clearTimeout(this.#timer);
    this.#scheduledAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#scheduledAt = Infinity;
      this.#turn = this.#runTurn();
    }, delayMs);
  }

  /** How many more messages a subscription should claim now. */
  #claimable(target: DeliveryTarget, now: number): number {
    return Math.min(CLAIM_MOST, target.wanted(this.#options.concurrency, now));
  }

  /** Claims nothing more, releases held messages, gives attempts in flight `graceMs` before cutting them, and records their outcomes. */
  async stop(graceMs: number): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#turn;
    for (const target of this.#targets.values()) this.#release(target.takeAll());
    if (this.#inFlight > 0) {
      const grace = setTimeout(() => {
        this.#interrupted = true;
        void this.#closeConnections('destroy');
      }, graceMs);
      await new Promise<void>((resolve) => this.#whenIdle.push(resolve));
      clearTimeout(grace);
    }
    await this.#closeConnections('close');
    await this.#settle().catch((error: unknown) => this.#log.error({ err: error }, 'the outcomes of the last webhook attempts could not be recorded'));
  }

  async #closeConnections(how: 'close' | 'destroy'): Promise<void> {
    await Promise.all(
      [...this.#targets.values()].map(async ({ pool }) => {
        if (pool.destroyed || pool.closed) return;
        await (how === 'close' ? pool.close() : pool.destroy());
      }),
    );
  }

  async #runTurn(): Promise<void> {
    try {
      // Side by side (they touch different messages, on two connections on PostgreSQL); the turn waits for both, so a claim never meets the next turn's.
      const [settled, claimed] = await Promise.allSettled([this.#settle(), this.#stopped ? undefined : this.#claim()]);
      for (const outcome of [settled, claimed]) if (outcome.status === 'rejected') throw outcome.reason;
      if (!this.#stopped && Date.now() - this.#lastPrune >= Math.min(this.#options.retentionMs, 60_000)) {
        this.#lastPrune = Date.now();
        const pruned = await this.#store.pruneMessages(new Date(Date.now() - this.#options.retentionMs));
        if (pruned > 0) this.#log.debug({ pruned }, 'webhook messages pruned');
      }
    } catch (error) {
      this.#log.error({ err: error }, 'the webhook dispatcher could not reach the store; it tries again');
    } finally {
      this.#turn = undefined;
      if (this.#again) {
        this.#again = false;
        this.#schedule(0);
      } else {
        this.#schedule(this.#settlements.length > 0 ? SETTLE_GAP_MS : this.#options.pollMs);
      }
    }
  }

  async #settle(): Promise<void> {
    if (this.#settlements.length === 0) return;
    const settlements = this.#settlements;
    this.#settlements = [];
    try {
      await this.#store.settleMessages(this.#owner, settlements);
    } catch (error) {
      // Kept to try again; if this process dies first, the messages come due again after their lease.
      this.#settlements = settlements.concat(this.#settlements);
      throw error;
    }
  }

  async #claim(): Promise<void> {
    const subscriptions = await this.#store.activeSubscriptions();
    if (subscriptions.length > 0) await loadReceiverClient();
    const now = Date.now();
    const active = new Map(subscriptions.map((subscription) => [subscription.id, subscription]));
    for (const subscription of subscriptions) {
      const known = this.#targets.get(subscription.id);
      if (known === undefined) this.#targets.set(subscription.id, new DeliveryTarget(subscription, now, this.#options.concurrency));
      else known.update(subscription, now);
    }
    for (const [id, target] of this.#targets) {
      const subscription = active.get(id);
      if (subscription === undefined || subscription.pausedAt !== null) {
        // Claimed before the pause or removal showed: not sent.
        this.#release(target.takeAll());
        if (subscription === undefined && target.inFlight === 0) {
          this.#targets.delete(id);
          target.retire();
        }
        continue;
      }
      const wanted = this.#claimable(target, now);
      if (wanted === 0) continue;
      const claimedAt = Date.now();
      const claimed = await this.#store.claimMessages({ subscriptionId: id, owner: this.#owner, limit: wanted, leaseMs: this.#leaseMs });
      target.hold(claimed, claimedAt + this.#leaseMs);
      this.#sendHeld(target);
    }
  }

  #sendHeld(target: DeliveryTarget): void {
    for (;;) {
      const held = target.next(this.#options.concurrency);
      if (held === undefined) return;
      if (this.#stopped || Date.now() + this.#options.timeoutMs + LEASE_MARGIN_MS > held.leaseEndsAt) this.#release([held]);
      else void this.#send(target, held.message);
    }
  }

  #release(held: readonly LeasedMessage[]): void {
    for (const { message } of held) {
      this.#settlements.push({ messageId: message.id, subscriptionId: message.subscriptionId, attempt: message.attempt, outcome: 'released' });
    }
  }

  async #send(target: DeliveryTarget, message: ClaimedMessage): Promise<void> {
    target.started();
    this.#inFlight += 1;
    // A throw is a defect, not the receiver's answer: recorded as a failed attempt, so the message is retried.
    let result = await attemptDelivery(target, message, this.#options.timeoutMs, this.#spans).catch(
      (error: unknown): AttemptResult => ({ delivered: false, error: error instanceof Error ? error.message : String(error) }),
    );
    if (!result.delivered && this.#interrupted) result = { delivered: false, error: 'interrupted: the server is stopping' };
    this.#settlements.push(this.#settlementOf(target, message, result));
    target.finished();
    this.#inFlight -= 1;
    if (this.#inFlight === 0) for (const resolve of this.#whenIdle.splice(0)) resolve();
    this.#sendHeld(target);
    if (this.#settlements.length >= SETTLE_BATCH || this.#claimable(target, Date.now()) > 0) this.wake();
    else this.#schedule(SETTLE_GAP_MS);
  }

  #settlementOf(target: DeliveryTarget, message: ClaimedMessage, result: AttemptResult): Settlement {
    const { id: messageId, subscriptionId, attempt } = message;
    if (result.delivered) {
      this.#metrics?.attempt('delivered', (Date.now() - message.createdAt.getTime()) / 1000);
      return { messageId, subscriptionId, attempt, outcome: 'delivered', answer: `HTTP ${result.status}` };
    }
    const retryInMs = retryDelayMs(attempt, { minMs: this.#options.retryMinMs, maxMs: this.#options.retryMaxMs });
    const nextAttemptAt = Date.now() + retryInMs;
    const outOfTime = nextAttemptAt > message.queuedAt.getTime() + this.#options.retryForMs;
    // The URL is logged without its query, which may carry a receiver's own token; the secret never is.
    const logged = {
      subscriptionId,
      url: `${target.url.origin}${target.url.pathname}`,
      messageId: webhookId(target.subscription.key, message.id),
      attempt,
      error: result.error,
    };
    if (outOfTime) {
      this.#metrics?.attempt('failed');
      this.#log.warn({ ...logged, retryForMs: this.#options.retryForMs }, 'webhook delivery failed for good: out of retries');
      return { messageId, subscriptionId, attempt, outcome: 'failed', error: result.error };
    }
    this.#metrics?.attempt('retry');
    this.#log.warn({ ...logged, nextAttemptAt: new Date(nextAttemptAt).toISOString() }, 'webhook delivery failed; it will be retried');
    return { messageId, subscriptionId, attempt, outcome: 'retry', retryInMs, error: result.error };
  }
}

/** Exponential backoff with full jitter, so that messages that failed together do not come back together, within `minMs` and `maxMs`. */
export function retryDelayMs(attempt: number, { minMs, maxMs }: { minMs: number; maxMs: number }, random: () => number = Math.random): number {
  const bound = Math.min(maxMs, minMs * 2 ** Math.min(attempt - 1, 52));
  return Math.round(minMs + random() * (bound - minMs));
}
