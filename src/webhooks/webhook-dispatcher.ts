import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { ClaimedMessage, Settlement, Subscription, WebhookStore } from '../store/webhook-store.js';
import { retryDelayMs } from './retry-delay.js';
import { type AttemptResult, postMessage } from './post-message.js';
import { messageBody, webhookId } from './message.js';
import { secretKey, signedHeaders } from './signature.js';
import { signingSecrets } from './subscriptions.js';
import type { WebhookMetrics } from '../observability/webhook-metrics.js';

export interface DispatcherOptions {
  /** Longest an attempt may take, in ms. */
  timeoutMs: number;
  /** The first retry's delay, and the least of any, in ms. */
  retryMinMs: number;
  /** The most any retry waits, in ms. */
  retryMaxMs: number;
  /** How long after its plant's commit (or its latest resend or resume) a message is retried before it is failed, in ms. */
  retryForMs: number;
  /** Attempts in flight at once per subscription, in this process. */
  concurrency: number;
  /** How long delivered and failed messages are kept, in ms. */
  retentionMs: number;
  /** How often the outbox is looked at when nothing wakes the dispatcher, in ms. */
  pollMs: number;
}

/**
 * While creates keep the event loop busier than this share, the dispatcher
 * yields: one turn at most every `YIELD_GAP_MS`. It then uses what the
 * creates leave, and catches up once they ease off.
 */
const BUSY_UTILIZATION = 0.8;
const YIELD_GAP_MS = 100;
/** How often the event loop's utilization is sampled. */
const LOAD_WINDOW_MS = 100;

interface Target {
  subscription: Subscription;
  url: URL;
  keys: Buffer[];
  inFlight: number;
}

/**
 * Delivers the outbox's messages, in the serving process, apart from the
 * request path: it is woken after a batch that wrote messages commits, and
 * looks by itself every `pollMs` (for messages that other processes wrote,
 * retries that came due and leases that ran out).
 *
 * Each turn settles the attempts that finished since the last (one
 * transaction), reads the subscriptions, and claims for each at most as many
 * due messages as it has free slots, so a claimed message is sent at once
 * and a removed or paused subscription gets no new attempt once removed or
 * paused. A slow or failing subscription fills only its own slots.
 */
export class WebhookDispatcher {
  readonly #store: WebhookStore;
  readonly #options: DispatcherOptions;
  readonly #log: FastifyBaseLogger;
  readonly #metrics: WebhookMetrics | undefined;
  /** Who holds this process's leases. */
  readonly #owner = `${hostname()}/${process.pid}/${randomUUID()}`;
  /** A claim holds a message this long: longer than an attempt may take, so a live process never loses its lease mid-attempt. */
  readonly #leaseMs: number;
  readonly #targets = new Map<number, Target>();
  #settlements: Settlement[] = [];
  #inFlight = 0;
  #timer: NodeJS.Timeout | undefined;
  /** When the scheduled turn runs. */
  #scheduledAt = Infinity;
  #turn: Promise<void> | undefined;
  #lastTurnAt = 0;
  /** When this process last committed messages: creates are flowing. */
  #lastWrittenAt = 0;
  #load: { sample: EventLoopUtilization; at: number; busy: boolean } = { sample: performance.eventLoopUtilization(), at: Date.now(), busy: false };
  #again = false;
  #stopped = false;
  #lastPrune = 0;
  #whenIdle: (() => void)[] = [];
  /** Aborts the attempts in flight when a stop's grace runs out. */
  readonly #stopping = new AbortController();

  constructor(store: WebhookStore, options: DispatcherOptions, log: FastifyBaseLogger, metrics?: WebhookMetrics) {
    this.#store = store;
    this.#options = options;
    this.#log = log;
    this.#metrics = metrics;
    this.#leaseMs = 2 * options.timeoutMs + 1000;
  }

  start(): void {
    this.#store.onMessagesWritten(() => {
      this.#lastWrittenAt = Date.now();
      this.wake();
    });
    this.wake();
  }

  /**
   * Looks at the outbox soon: after the I/O already waiting (the answer to
   * the create that woke it goes first), or, while creates keep the process
   * busy, at the next yield gap; right after the turn under way if one is.
   */
  wake(): void {
    if (this.#stopped) return;
    if (this.#turn !== undefined) {
      this.#again = true;
      return;
    }
    this.#schedule(this.#pace());
  }

  #schedule(delayMs: number): void {
    const at = Date.now() + delayMs;
    if (this.#stopped || this.#turn !== undefined || (this.#timer !== undefined && this.#scheduledAt <= at)) return;
    clearTimeout(this.#timer);
    this.#scheduledAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#scheduledAt = Infinity;
      this.#lastTurnAt = Date.now();
      this.#turn = this.#runTurn();
    }, delayMs);
  }

  /** How long the next turn waits: nothing, unless creates are keeping the event loop busy. */
  #pace(): number {
    const now = Date.now();
    if (now - this.#load.at >= LOAD_WINDOW_MS) {
      const sample = performance.eventLoopUtilization();
      const utilization = performance.eventLoopUtilization(sample, this.#load.sample).utilization;
      this.#load = { sample, at: now, busy: utilization > BUSY_UTILIZATION && now - this.#lastWrittenAt < 2 * LOAD_WINDOW_MS };
    }
    return this.#load.busy ? Math.max(0, this.#lastTurnAt + YIELD_GAP_MS - now) : 0;
  }

  /**
   * Claims nothing more, lets the attempts in flight finish for up to
   * `graceMs` (then cuts them: they are retried later, by this process's
   * successor or another) and records their outcomes.
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#turn;
    if (this.#inFlight > 0) {
      const grace = setTimeout(() => this.#stopping.abort(), graceMs);
      await new Promise<void>((resolve) => this.#whenIdle.push(resolve));
      clearTimeout(grace);
    }
    await this.#settle().catch((error: unknown) => this.#log.error({ err: error }, 'the outcomes of the last webhook attempts could not be recorded'));
  }

  async #runTurn(): Promise<void> {
    try {
      await this.#settle();
      if (!this.#stopped) await this.#claimAndSend();
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
        this.#schedule(this.#pace());
      } else {
        this.#schedule(this.#options.pollMs);
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

  async #claimAndSend(): Promise<void> {
    const subscriptions = await this.#store.activeSubscriptions();
    const now = Date.now();
    const active = new Set<number>();
    for (const subscription of subscriptions) {
      active.add(subscription.id);
      const known = this.#targets.get(subscription.id);
      // Read with the subscriptions each turn, so a retired secret stops signing within a turn of its window's end.
      const keys = signingSecrets(subscription, now).map(secretKey);
      // Updated in place: the attempts in flight hold this object and count themselves out of it.
      if (known === undefined) this.#targets.set(subscription.id, { subscription, url: new URL(subscription.url), keys, inFlight: 0 });
      else Object.assign(known, { subscription, url: new URL(subscription.url), keys });
    }
    for (const id of this.#targets.keys()) if (!active.has(id) && this.#targets.get(id)!.inFlight === 0) this.#targets.delete(id);
    for (const target of this.#targets.values()) {
      const free = this.#options.concurrency - target.inFlight;
      // A paused subscription's messages wait in the outbox; the store would claim none of them anyway.
      if (!active.has(target.subscription.id) || target.subscription.pausedAt !== null || free <= 0) continue;
      const claimed = await this.#store.claimMessages({ subscriptionId: target.subscription.id, owner: this.#owner, limit: free, leaseMs: this.#leaseMs });
      for (const message of claimed) void this.#send(target, message);
    }
  }

  async #send(target: Target, message: ClaimedMessage): Promise<void> {
    target.inFlight += 1;
    this.#inFlight += 1;
    let result: AttemptResult;
    try {
      const id = webhookId(target.subscription.key, message.id);
      const body = messageBody(message);
      result = await postMessage(target.url, signedHeaders(target.keys, id, body), body, this.#options.timeoutMs, this.#stopping.signal);
    } catch (error) {
      result = { delivered: false, error: error instanceof Error ? error.message : String(error) };
    }
    this.#settlements.push(this.#settlementOf(target, message, result));
    target.inFlight -= 1;
    this.#inFlight -= 1;
    if (this.#inFlight === 0) for (const resolve of this.#whenIdle.splice(0)) resolve();
    this.wake();
  }

  #settlementOf(target: Target, message: ClaimedMessage, result: AttemptResult): Settlement {
    const { id: messageId, subscriptionId, attempt } = message;
    if (result.delivered) {
      this.#metrics?.attempts.inc({ outcome: 'delivered' });
      this.#metrics?.latency.observe((Date.now() - message.createdAt.getTime()) / 1000);
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
      this.#metrics?.attempts.inc({ outcome: 'failed' });
      this.#log.warn({ ...logged, retryForMs: this.#options.retryForMs }, 'webhook delivery failed for good: out of retries');
      return { messageId, subscriptionId, attempt, outcome: 'failed', error: result.error };
    }
    this.#metrics?.attempts.inc({ outcome: 'retry' });
    this.#log.warn({ ...logged, nextAttemptAt: new Date(nextAttemptAt).toISOString() }, 'webhook delivery failed; it will be retried');
    return { messageId, subscriptionId, attempt, outcome: 'retry', retryInMs, error: result.error };
  }
}
