// One round of `npm run bench -- --webhook`: the service with one subscription, whose receiver
// (bench/webhook-receiver.mjs) verifies and times every delivery. In order: the loaded run, a
// drain, a steady phase at half the process's sustainable create rate, a drain, the lone run. The drains let each
// phase start without the last one's backlog: the lone run then measures a create beside its own
// delivery. Every wait is bounded, so a dispatcher that falls behind yields figures that say so
// rather than a hang.
import type { LoadResult } from './load/load-generator.js';
import type { RunningServer } from './servers.js';
import { metricValue, type OldestPending, plantsCreated, sampleOldestPending } from './service-metrics.js';
import type { BenchReceiver, ReceiverStats } from './webhook-receiver.js';

/** How often a drain asks the receiver how far it got. */
const DRAIN_POLL_MS = 100;
/** The longest a drain waits, once the receiver has every message, for the service to have recorded them all. */
const RECORDED_LIMIT_MS = 10_000;
/** How often the steady phase scrapes the oldest pending message's age. */
const OLDEST_PENDING_EVERY_MS = 500;

/** A drain: from when creates stop until every plant created was delivered, or its time limit. */
export interface Drain {
  /** Until the last delivery it waited for arrived; the limit when it did not. */
  seconds: number;
  /** Deliveries that arrived during it. */
  delivered: number;
  /** delivered / seconds; NaN when nothing was left to deliver. */
  perSecond: number;
  /** The service's CPU time (user + system, from /proc) over the drain, divided by its deliveries. */
  cpuUsPerDelivery: number;
  /** Messages not delivered when the limit was hit; 0 when it drained. */
  left: number;
  /** Plants the service had created by its end, from its /metrics. */
  created: number;
}

export interface SteadyPhase {
  askedPerSecond: number;
  achievedPerSecond: number;
  /** Requests that failed or were not answered 2xx. */
  failedRequests: number;
  /** Plants created in the phase. */
  created: number;
  /**
   * Lag percentiles (ms) of the phase's messages, from the plant's commit to the message's first
   * arrival; null where the percentile falls among messages still not delivered after the drain
   * that followed (their lag is then more than `undeliveredLagAboveSeconds`).
   */
  lagP50Ms: number | null;
  lagP99Ms: number | null;
  undelivered: number;
  undeliveredLagAboveSeconds: number;
  oldestPending: OldestPending;
  drainAfter: Drain;
}

export interface WebhookRound {
  /** Creates a second of the loaded measurement. */
  createsPerSecond: number;
  /** Deliveries a second that arrived while the loaded measurement ran (its warm-up left out). */
  deliveriesPerSecondUnderLoad: number;
  drain: Drain;
  steady: SteadyPhase;
  /** What the receiver counted over the whole round, the lone run included. */
  receiver: ReceiverStats;
  /** The receiver's own CPU time over the round, divided by the deliveries it received: what it took from the machine. */
  receiverCpuUsPerDelivery: number;
}

export interface WebhookRoundPlan<S extends LoadResult> {
  server: RunningServer;
  receiver: BenchReceiver;
  /** The loaded run: its warm-up, then `measurementStarts`, then its measurement. */
  loaded(measurementStarts: () => Promise<void>): Promise<S>;
  /** `seconds` of creates paced to `ratePerSecond`. */
  paced(ratePerSecond: number, seconds: number): Promise<LoadResult>;
  lone(): Promise<S>;
  steadySeconds: number;
  drainLimitMs: number;
  /** A line of progress, for the operator waiting. */
  log(line: string): void;
}

export async function measureWebhookRound<S extends LoadResult>(plan: WebhookRoundPlan<S>): Promise<{ many: S; lone: S; webhook: WebhookRound }> {
  const { server, receiver } = plan;
  const receiverCpuBefore = receiver.cpuSeconds();
  let measurementStart: { stats: ReceiverStats; at: number } | undefined;
  const many = await plan.loaded(async () => {
    measurementStart = { stats: await receiver.stats(), at: Date.now() };
  });
  const measurementEnd = { stats: await receiver.stats(), at: Date.now() };
  if (measurementStart === undefined) throw new Error('the loaded run did not say when its measurement started');
  const deliveredUnderLoad = measurementEnd.stats.received - measurementStart.stats.received;
  const deliveriesPerSecondUnderLoad = deliveredUnderLoad / ((measurementEnd.at - measurementStart.at) / 1000);
  plan.log(`loaded: ${Math.round(many.requestsPerSecond)} creates/s, ${Math.round(deliveriesPerSecondUnderLoad)} deliveries/s; draining (at most ${plan.drainLimitMs / 1000} s)`);
  const drain = await drainBacklog(server, receiver, plan.drainLimitMs);
  plan.log(`drained ${drain.delivered} in ${drain.seconds.toFixed(1)} s${drain.left > 0 ? `, ${drain.left} left` : ''}; steady phase`);
  const steady = await steadyPhase(plan, sustainableRate(many.requestsPerSecond, drain.perSecond) / 2, drain);
  plan.log(`steady: ${Math.round(steady.achievedPerSecond)} creates/s, max oldest pending ${steady.oldestPending.maxSeconds.toFixed(2)} s; lone run`);
  const lone = await plan.lone();
  const totals = await receiver.stats();
  const receiverCpuUsPerDelivery = ((receiver.cpuSeconds() - receiverCpuBefore) * 1e6) / totals.received;
  return {
    many,
    lone,
    webhook: { createsPerSecond: many.requestsPerSecond, deliveriesPerSecondUnderLoad, drain, steady, receiver: totals, receiverCpuUsPerDelivery },
  };
}

/**
 * The most creates a second the process sustains with every plant also delivered: a create costs it
 * 1/creates of a second, as measured with the load alone, and a delivery 1/deliveries, as measured
 * in the drain alone; both share the one process. Above it, the backlog grows without bound.
 */
function sustainableRate(createsPerSecond: number, deliveriesPerSecond: number): number {
  // Nothing left to drain: the deliveries kept up with the load itself.
  if (!Number.isFinite(deliveriesPerSecond)) return createsPerSecond;
  return 1 / (1 / createsPerSecond + 1 / deliveriesPerSecond);
}

/** Creates paced to `ratePerSecond`, with the oldest pending message's age sampled throughout; then a drain. */
async function steadyPhase(plan: WebhookRoundPlan<LoadResult>, ratePerSecond: number, before: Drain): Promise<SteadyPhase> {
  const { server, receiver } = plan;
  // The phase's messages are those committed from here on: nothing else creates plants until the lone run.
  const committedFrom = Date.now();
  const sampler = sampleOldestPending(server.url, OLDEST_PENDING_EVERY_MS);
  const paced = await plan.paced(Math.max(1, ratePerSecond), plan.steadySeconds);
  const endedAt = Date.now();
  const oldestPending = await sampler.stop();
  const drainAfter = await drainBacklog(server, receiver, plan.drainLimitMs);
  const created = drainAfter.created - before.created;
  const lag = await receiver.lagPercentiles(committedFrom, created, [0.5, 0.99]);
  return {
    askedPerSecond: ratePerSecond,
    achievedPerSecond: paced.requestsPerSecond,
    failedRequests: paced.errors + paced.non2xx,
    created,
    lagP50Ms: lag.values[0] ?? null,
    lagP99Ms: lag.values[1] ?? null,
    undelivered: Math.max(0, created - lag.delivered),
    // Each was committed before the phase ended and had not arrived when the receiver was asked.
    undeliveredLagAboveSeconds: (Date.now() - endedAt) / 1000,
    oldestPending,
    drainAfter,
  };
}

/**
 * Waits until the receiver has had every plant the service created, or `limitMs`, and measures the
 * deliveries a second and the service's CPU time a delivery meanwhile.
 */
export async function drainBacklog(server: RunningServer, receiver: BenchReceiver, limitMs: number): Promise<Drain> {
  // Scraped before the clock and the CPU count start: a scrape is the benchmark's work, not the drain's.
  let created = await plantsCreated(server.url);
  const startedAt = Date.now();
  const cpuBefore = server.cpuSeconds();
  const before = await receiver.stats();
  let now = before;
  let cpuAfter: number;
  for (;;) {
    const done = now.distinct >= created;
    if (done || Date.now() - startedAt >= limitMs) {
      cpuAfter = server.cpuSeconds();
      if (!done) break;
      // A create that was under way when the load generator stopped may have been committed after the count.
      const again = await plantsCreated(server.url);
      if (again <= created) break;
      created = again;
    }
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    now = await receiver.stats();
  }
  const left = Math.max(0, created - now.distinct);
  if (left === 0) await untilRecorded(server.url);
  const delivered = now.received - before.received;
  // Drained: it took until the last delivery arrived, not until the poll that saw it.
  const endedAt = left > 0 ? Date.now() : delivered > 0 ? now.lastReceivedAt : startedAt;
  const seconds = Math.max(0, endedAt - startedAt) / 1000;
  return {
    seconds,
    delivered,
    perSecond: delivered === 0 ? NaN : delivered / seconds,
    cpuUsPerDelivery: delivered === 0 ? NaN : ((cpuAfter - cpuBefore) * 1e6) / delivered,
    left,
    created,
  };
}

/**
 * Waits until the service has recorded every delivery (no message pending: the oldest pending
 * message's age is 0), at most RECORDED_LIMIT_MS. The receiver counts a message when it arrives, and
 * the service records it as delivered a turn later: a phase started at once would find the drain's
 * last messages still pending and read their age, about the drain's length, as its own.
 */
async function untilRecorded(serviceUrl: string): Promise<void> {
  const deadline = Date.now() + RECORDED_LIMIT_MS;
  while ((await metricValue(serviceUrl, 'plantstore_webhook_oldest_pending_seconds')) !== 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
  }
}
