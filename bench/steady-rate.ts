// npx tsx bench/steady-rate.ts [--store sqlite|postgres] [--rate N] [--seconds S] [--loaded S] [--rounds R] [--subscribers 0|1] TARGET...
// How far builds of the service fall behind in delivering webhooks while creates arrive at a steady, paced rate:
// the figure a change to the dispatcher's pace is judged by. A TARGET is a folder holding a build's bin/, dist/
// and openapi/ with node_modules beside them (as for compare-builds.ts). Each round measures every target in
// turn, in a rotating order: a fresh store with one subscription to the benchmark's receiver (core 1, verifying
// every signature), the service on core 0 with its defaults, with --loaded first S seconds of creates as fast as
// it answers and their drain (as npm run bench -- --webhook does), then S seconds of creates paced to N a second
// (wrk, 64 connections, core 1). Reports the largest age of the oldest pending message during the phase (read
// from GET /metrics every 250 ms), the messages still to deliver when it ended, the service's CPU time a create
// and its share of its core, and the mean commit batch. Prints each round, then the medians.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { loadGenerator } from './load/load-generator.js';
import { median } from './median.js';
import { inRotation } from './rotation.js';
import { startBuild } from './servers.js';
import { metricValue, plantsCreated, sampleOldestPending } from './service-metrics.js';
import { freshStore, type StoreKind, subscribe } from './stores.js';
import { startReceiver } from './webhook-receiver.js';
import { drainBacklog } from './webhook-round.js';

const { values, positionals: targets } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'sqlite' },
    rate: { type: 'string', default: '2700' },
    seconds: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
    subscribers: { type: 'string', default: '1' },
    loaded: { type: 'string', default: '0' },
    'postgres-url': { type: 'string', default: process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});
if (targets.length === 0) throw new Error('name at least one target: the folder of a build');
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const subscribed = values.subscribers !== '0';
const pinned = availableParallelism() >= 2;
/** The longest the drain after --loaded may take, as in npm run bench -- --webhook. */
const DRAIN_LIMIT_MS = 120_000;

interface Phase {
  oldestSeconds: number;
  behind: number;
  createsPerSecond: number;
  cpuUsPerCreate: number;
  coreShare: number;
  meanBatch: number;
}

async function phase(target: string): Promise<Phase> {
  const bench = await freshStore(values.store as StoreKind, values['postgres-url']);
  const receiver = await startReceiver(pinned ? 1 : undefined);
  try {
    if (subscribed) await receiver.useSecret(await subscribe(bench.url, receiver.url));
    const service = await startBuild(`${target}/bin/plantstore`, { DATABASE_URL: bench.url }, pinned ? 0 : undefined);
    try {
      if (Number(values.loaded) > 0) {
        // As npm run bench -- --webhook does before its steady phase: creates as fast as the service answers, then their drain.
        await loadGenerator.run({ url: service.url, token: bench.token, connections: 64, seconds: Number(values.loaded), idBase: 0, cpu: pinned ? 1 : undefined });
        await drainBacklog(service, receiver, DRAIN_LIMIT_MS);
      }
      const createdBefore = await plantsCreated(service.url);
      const batchesBefore = (await metricValue(service.url, 'plantstore_store_commit_batch_size_count')) ?? 0;
      const sampler = sampleOldestPending(service.url, 250);
      const cpuBefore = service.cpuSeconds();
      const startedAt = Date.now();
      const load = await loadGenerator.run({ url: service.url, token: bench.token, connections: 64, seconds, idBase: 1_000_000, cpu: pinned ? 1 : undefined, ratePerSecond: rate });
      const cpu = service.cpuSeconds() - cpuBefore;
      const elapsed = (Date.now() - startedAt) / 1000;
      const oldest = await sampler.stop();
      const created = (await plantsCreated(service.url)) - createdBefore;
      const batches = ((await metricValue(service.url, 'plantstore_store_commit_batch_size_count')) ?? NaN) - batchesBefore;
      const delivered = (await receiver.stats()).distinct;
      return {
        oldestSeconds: subscribed ? oldest.maxSeconds : 0,
        behind: subscribed ? created + createdBefore - delivered : 0,
        createsPerSecond: load.requestsPerSecond,
        cpuUsPerCreate: (cpu * 1e6) / created,
        coreShare: cpu / elapsed,
        meanBatch: created / batches,
      };
    } finally {
      await service.stop();
    }
  } finally {
    await receiver.close();
    await bench.cleanup();
  }
}

const line = (target: string, p: Phase) =>
  `| ${target} | ${Math.round(p.createsPerSecond)} | ${p.oldestSeconds.toFixed(2)} | ${Math.round(p.behind)} | ${p.cpuUsPerCreate.toFixed(1)} | ${p.coreShare.toFixed(2)} | ${p.meanBatch.toFixed(2)} |`;
const header = '| target | creates/s | max oldest pending s | behind at end | CPU µs a create | core share | mean batch |\n|---|---|---|---|---|---|---|\n';
process.stdout.write(`${values.store}, ${rate} creates/s asked for ${seconds} s, ${subscribed ? 'one subscription' : 'no subscription'}\n\n${header}`);
const figures = await inRotation(targets, Number(values.rounds), phase, (round, target, result) =>
  process.stdout.write(`${line(`${target} (round ${round})`, result)}\n`),
);
process.stdout.write(`\nmedians of ${values.rounds} rounds:\n\n${header}`);
for (const [target, phases] of figures) {
  const of = (pick: (p: Phase) => number) => median(phases.map(pick));
  const medians: Phase = {
    oldestSeconds: of((p) => p.oldestSeconds),
    behind: of((p) => p.behind),
    createsPerSecond: of((p) => p.createsPerSecond),
    cpuUsPerCreate: of((p) => p.cpuUsPerCreate),
    coreShare: of((p) => p.coreShare),
    meanBatch: of((p) => p.meanBatch),
  };
  process.stdout.write(`${line(target, medians)}\n`);
}
