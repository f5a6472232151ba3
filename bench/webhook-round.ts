// One round of `npm run bench -- --webhook`: what webhook delivery does beside creates, each phase on a fresh
// store with one subscription to the benchmark's receiver (bench/webhook-receiver.mjs), which verifies and
// times every delivery. In order: creates saturating the service (wrk) with no subscription, then with one;
// a backlog drained by one deliverer, then by two; creates at a steady rate with the lag of each delivery;
// deliverers killed under load, and what arrived. Every wait is bounded, so a deliverer that falls behind
// yields figures that say so rather than a hang.
import type { LoadResult } from './load/load-generator.js';
import type { RunningServer } from './servers.js';
import { type OldestPending, plantsCreated, sampleOldestPending } from './service-metrics.js';
import type { BenchStore } from './stores.js';
import type { BenchReceiver, ReceiverStats } from './webhook-receiver.js';

/** How often a wait asks the receiver how far it got. */
const POLL_MS = 100;
/** How often the steady phase scrapes the oldest pending message's age. */
const OLDEST_PENDING_EVERY_MS = 500;
/** With deliverers killed, a message claimed by the dead one waits for its lease: 2 × this + 1 s. */
const KILLED_TIMEOUT_MS = 2000;

export interface WebhookPhases {
  /** Seconds of each saturating run, and its connections. */
  saturationSeconds: number;
  saturationConnections: number;
  /** Messages in the drained backlog. */
  drainMessages: number;
  steadyPerSecond: number;
  steadySeconds: number;
  kills: number;
  /** Between two kills. */
  killEveryMs: number;
  killedPerSecond: number;
  /** The longest any wait for deliveries lasts. */
  drainLimitMs: number;
}

export interface WebhookRoundPlan {
  phases: WebhookPhases;
  receiver: BenchReceiver;
  /** Runs `work` on a new, empty store with a token, and removes the store. */
  withFreshStore<T>(work: (bench: BenchStore) => Promise<T>): Promise<T>;
  subscribe(bench: BenchStore): Promise<string>;
  /** Writes `count` plants with their messages, without a server. */
  preload(bench: BenchStore, count: number): Promise<void>;
  startService(bench: BenchStore, settings?: Record<string, string>): Promise<RunningServer>;
  startDeliverer(bench: BenchStore, settings?: Record<string, string>): Promise<RunningServer>;
  load(server: RunningServer, bench: BenchStore, run: { connections: number; seconds: number; warmupSeconds?: number; ratePerSecond?: number; measurementStarts?: () => Promise<void> }): Promise<LoadResult>;
  log(line: string): void;
}

export interface Saturation {
  createsPerSecondWithout: number;
  createsPerSecond: number;
  deliveriesPerSecond: number;
}

export interface Drain {
  deliverers: number;
  /** Deliveries a second, from the deliverers' start to the last arrival; NaN when the limit was hit. */
  perSecond: number;
  /** The deliverers' CPU time (user + system, /proc) over the drain, divided by its deliveries. */
  cpuUsPerDelivery: number;
  left: number;
}

export interface SteadyPhase {
  askedPerSecond: number;
  achievedPerSecond: number;
  failedRequests: number;
  created: number;
  /** From the plant's commit to its message's first arrival; null where the percentile falls among those never delivered. */
  lagP50Ms: number | null;
  lagP99Ms: number | null;
  undelivered: number;
  oldestPending: OldestPending;
}

export interface Kills {
  kills: number;
  /** Plants the server created (its /metrics), and the 2xx the load generator counted. */
  created: number;
  acknowledged: number;
  /** Distinct messages that arrived, and those delivered more than once. */
  delivered: number;
  duplicates: number;
  /** Seconds from the end of the creates until the last message arrived. */
  caughtUpSeconds: number;
}

export interface WebhookRound {
  saturation: Saturation;
  drains: Drain[];
  steady: SteadyPhase;
  kills: Kills;
  /** What the receiver counted over the whole round. */
  receiver: ReceiverStats;
  receiverCpuUsPerDelivery: number;
}

export async function measureWebhookRound(plan: WebhookRoundPlan): Promise<WebhookRound> {
  const { receiver } = plan;
  const before = { stats: await receiver.stats(), cpu: receiver.cpuSeconds() };
  const saturation = await saturate(plan);
  plan.log(`saturated: ${Math.round(saturation.createsPerSecond)} creates/s (${Math.round(saturation.createsPerSecondWithout)} without a subscription), ${Math.round(saturation.deliveriesPerSecond)} deliveries/s`);
  const drains: Drain[] = [];
  for (const deliverers of [1, 2]) {
    const drain = await drainBacklog(plan, deliverers);
    plan.log(`${deliverers} deliverer(s): ${Math.round(drain.perSecond)} deliveries/s${drain.left > 0 ? `, ${drain.left} left` : ''}`);
    drains.push(drain);
  }
  const steady = await steadyPhase(plan);
  plan.log(`steady: ${Math.round(steady.achievedPerSecond)} creates/s, lag p99 ${steady.lagP99Ms ?? 'not delivered'} ms`);
  const kills = await killDeliverers(plan);
  plan.log(`${kills.kills} kills: ${kills.created} created, ${kills.delivered} delivered, ${kills.duplicates} duplicates`);
  const after = await receiver.stats();
  const received = after.received - before.stats.received;
  return {
    saturation,
    drains,
    steady,
    kills,
    receiver: {
      ...after,
      received,
      valid: after.valid - before.stats.valid,
      invalid: after.invalid - before.stats.invalid,
      distinct: after.distinct - before.stats.distinct,
      duplicates: after.duplicates - before.stats.duplicates,
    },
    receiverCpuUsPerDelivery: ((receiver.cpuSeconds() - before.cpu) * 1e6) / received,
  };
}

/** The service saturated by creates, on a store with no subscription and then on one with a subscription. */
async function saturate(plan: WebhookRoundPlan): Promise<Saturation> {
  const run = { connections: plan.phases.saturationConnections, seconds: plan.phases.saturationSeconds, warmupSeconds: 2 };
  const without = await plan.withFreshStore(async (bench) => {
    const server = await plan.startService(bench);
    try {
      return await plan.load(server, bench, run);
    } finally {
      await server.stop();
    }
  });
  return plan.withFreshStore(async (bench) => {
    await plan.receiver.useSecret(await plan.subscribe(bench));
    const server = await plan.startService(bench);
    try {
      let start: { received: number; at: number } | undefined;
      const loaded = await plan.load(server, bench, {
        ...run,
        measurementStarts: async () => {
          start = { received: (await plan.receiver.stats()).received, at: Date.now() };
        },
      });
      const end = { received: (await plan.receiver.stats()).received, at: Date.now() };
      if (start === undefined) throw new Error('the saturating run did not say when its measurement started');
      return {
        createsPerSecondWithout: without.requestsPerSecond,
        createsPerSecond: loaded.requestsPerSecond,
        deliveriesPerSecond: ((end.received - start.received) * 1000) / (end.at - start.at),
      };
    } finally {
      // Its backlog goes with its store.
      await server.stop();
    }
  });
}

/** A backlog written before any deliverer runs, then `deliverers` of them, until the receiver has every message. */
async function drainBacklog(plan: WebhookRoundPlan, deliverers: number): Promise<Drain> {
  const messages = plan.phases.drainMessages;
  return plan.withFreshStore(async (bench) => {
    await plan.receiver.useSecret(await plan.subscribe(bench));
    await plan.preload(bench, messages);
    const before = (await plan.receiver.stats()).distinct;
    const running = await Promise.all(Array.from({ length: deliverers }, () => plan.startDeliverer(bench)));
    try {
      // Counted from when every deliverer answers, so that their start is left out.
      const startedAt = Date.now();
      const cpuBefore = running.reduce((sum, deliverer) => sum + deliverer.cpuSeconds(), 0);
      const from = (await plan.receiver.stats()).distinct;
      const stats = await until(plan, (now) => now.distinct - before >= messages);
      const cpu = running.reduce((sum, deliverer) => sum + deliverer.cpuSeconds(), 0) - cpuBefore;
      const delivered = stats.distinct - from;
      const left = messages - (stats.distinct - before);
      return {
        deliverers,
        perSecond: left > 0 ? NaN : (delivered * 1000) / (stats.lastReceivedAt - startedAt),
        cpuUsPerDelivery: (cpu * 1e6) / delivered,
        left,
      };
    } finally {
      await Promise.all(running.map((deliverer) => deliverer.stop()));
    }
  });
}

/** Creates paced to the steady rate with the oldest pending message's age sampled, then until all arrived. */
async function steadyPhase(plan: WebhookRoundPlan): Promise<SteadyPhase> {
  const { receiver, phases } = plan;
  return plan.withFreshStore(async (bench) => {
    await receiver.useSecret(await plan.subscribe(bench));
    const server = await plan.startService(bench);
    try {
      const before = (await receiver.stats()).distinct;
      const committedFrom = Date.now();
      const sampler = sampleOldestPending(server.url, OLDEST_PENDING_EVERY_MS);
      const paced = await plan.load(server, bench, { connections: 32, seconds: phases.steadySeconds, ratePerSecond: phases.steadyPerSecond });
      const oldestPending = await sampler.stop();
      const created = await plantsCreated(server.url);
      await until(plan, (now) => now.distinct - before >= created);
      const lag = await receiver.lagPercentiles(committedFrom, created, [0.5, 0.99]);
      return {
        askedPerSecond: phases.steadyPerSecond,
        achievedPerSecond: paced.requestsPerSecond,
        failedRequests: paced.errors + paced.non2xx,
        created,
        lagP50Ms: lag.values[0] ?? null,
        lagP99Ms: lag.values[1] ?? null,
        undelivered: Math.max(0, created - lag.delivered),
        oldestPending,
      };
    } finally {
      await server.stop();
    }
  });
}

/**
 * Creates at a steady rate through a server that delivers nothing, beside two deliverers, one of which is
 * killed (SIGKILL) and started again every killEveryMs; then until every plant created has arrived.
 */
async function killDeliverers(plan: WebhookRoundPlan): Promise<Kills> {
  const { receiver, phases } = plan;
  return plan.withFreshStore(async (bench) => {
    await receiver.useSecret(await plan.subscribe(bench));
    const before = await receiver.stats();
    const server = await plan.startService(bench, { WEBHOOK_DELIVERY: 'off' });
    const settings = { WEBHOOK_TIMEOUT_MS: String(KILLED_TIMEOUT_MS) };
    const deliverers = [await plan.startDeliverer(bench, settings), await plan.startDeliverer(bench, settings)];
    try {
      // wrk takes whole seconds.
      const seconds = Math.ceil((phases.kills * phases.killEveryMs) / 1000) + 1;
      const loaded = plan.load(server, bench, { connections: 32, seconds, ratePerSecond: phases.killedPerSecond });
      let kills = 0;
      while (kills < phases.kills) {
        await new Promise((resolve) => setTimeout(resolve, phases.killEveryMs));
        const victim = kills % deliverers.length;
        await deliverers[victim]!.kill();
        kills += 1;
        deliverers[victim] = await plan.startDeliverer(bench, settings);
      }
      const load = await loaded;
      const endedAt = Date.now();
      const created = await plantsCreated(server.url);
      const stats = await until(plan, (now) => now.distinct - before.distinct >= created);
      return {
        kills,
        created,
        acknowledged: load.requests - load.non2xx,
        delivered: stats.distinct - before.distinct,
        duplicates: stats.duplicates - before.duplicates,
        caughtUpSeconds: Math.max(0, stats.lastReceivedAt - endedAt) / 1000,
      };
    } finally {
      await Promise.all(deliverers.map((deliverer) => deliverer.stop()));
      await server.stop();
    }
  });
}

/** Polls the receiver until `done`, at most drainLimitMs; resolves its last counts. */
async function until(plan: WebhookRoundPlan, done: (stats: ReceiverStats) => boolean): Promise<ReceiverStats> {
  const deadline = Date.now() + plan.phases.drainLimitMs;
  for (;;) {
    const stats = await plan.receiver.stats();
    if (done(stats) || Date.now() >= deadline) return stats;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
