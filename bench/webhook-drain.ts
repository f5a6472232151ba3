// npx tsx bench/webhook-drain.ts [--store sqlite|postgres] [--messages N] [--rounds R] TARGET...
// How fast builds of the service drain a backlog of webhook messages, and the CPU each delivery costs them:
// the figure a change to the dispatcher, the outbox or the delivery request is judged by. A TARGET is a folder
// holding a build's bin/, dist/ and openapi/ with node_modules beside them (as for compare-builds.ts). Each
// round measures every target in turn, in a rotating order: a fresh store with one subscription to the
// benchmark's receiver (on core 1, verifying every signature), N plants written with their messages before
// the service starts, then the service (on core 0, its defaults) until the receiver has every message. Counted
// from the moment the service first answers, so that its start is left out: deliveries a second, and the
// service's CPU time (user + system, /proc) over those deliveries. Prints each round, then the medians.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { median } from './median.js';
import { inRotation } from './rotation.js';
import { startBuild } from './servers.js';
import { freshStore, preload, type StoreKind, subscribe } from './stores.js';
import { startReceiver } from './webhook-receiver.js';

const { values, positionals: targets } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'sqlite' },
    messages: { type: 'string', default: '40000' },
    rounds: { type: 'string', default: '3' },
    'postgres-url': { type: 'string', default: process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});
if (targets.length === 0) throw new Error('name at least one target: the folder of a build');
const messages = Number(values.messages);
/** The longest a drain may take: far beyond the slowest seen (about 10 s for 40,000). */
const DRAIN_LIMIT_MS = 300_000;
const pinned = availableParallelism() >= 2;

interface Drain {
  perSecond: number;
  cpuUsPerDelivery: number;
}

async function drain(target: string): Promise<Drain> {
  const bench = await freshStore(values.store as StoreKind, values['postgres-url']);
  const receiver = await startReceiver(pinned ? 1 : undefined);
  try {
    await receiver.useSecret(await subscribe(bench.url, receiver.url));
    await preload(bench.url, messages, () => undefined);
    const service = await startBuild(`${target}/bin/plantstore`, { DATABASE_URL: bench.url }, pinned ? 0 : undefined);
    try {
      const deadline = Date.now() + DRAIN_LIMIT_MS;
      const start = { at: Date.now(), cpu: service.cpuSeconds(), delivered: (await receiver.stats()).distinct };
      for (;;) {
        const stats = await receiver.stats();
        if (stats.distinct >= messages) {
          if (stats.invalid > 0) throw new Error(`${target}: ${stats.invalid} deliveries did not verify: ${stats.firstProblem}`);
          const delivered = stats.distinct - start.delivered;
          return {
            perSecond: (delivered * 1000) / (stats.lastReceivedAt - start.at),
            cpuUsPerDelivery: ((service.cpuSeconds() - start.cpu) * 1e6) / delivered,
          };
        }
        if (Date.now() > deadline) throw new Error(`${target}: ${stats.distinct} of ${messages} delivered in ${DRAIN_LIMIT_MS / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await service.stop();
    }
  } finally {
    await receiver.close();
    await bench.cleanup();
  }
}

const figures = await inRotation(targets, Number(values.rounds), drain, (round, target, result) =>
  process.stdout.write(`round ${round}: ${target}: ${Math.round(result.perSecond)} deliveries/s, ${result.cpuUsPerDelivery.toFixed(1)} µs of CPU a delivery\n`),
);
process.stdout.write(`\n${messages} messages, ${values.store}, medians of ${values.rounds} rounds:\n\n| target | deliveries/s | CPU µs a delivery |\n|---|---|---|\n`);
for (const [target, drains] of figures) {
  process.stdout.write(`| ${target} | ${Math.round(median(drains.map((d) => d.perSecond)))} | ${median(drains.map((d) => d.cpuUsPerDelivery)).toFixed(1)} |\n`);
}
