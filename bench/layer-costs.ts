// npx tsx bench/layer-costs.ts: what each layer of per-request work removed from the write path cost
// before and costs now, per call, each measured in this one process (best of 7 runs; pin it with
// `taskset -c 0` for steadier figures). The "before" side calls the libraries as the service used to.
import { openSync } from 'node:fs';
import { pino } from 'pino';
import { parseAnyJson, parseExactJson } from '../src/contract/exact-json.js';
import { AccessLines } from '../src/observability/access-line.js';
import { loggerOptions } from '../src/observability/logger.js';
import { Metrics } from '../src/observability/metrics.js';
import { GroupCommit } from '../src/plants/group-commit.js';
import type { Store } from '../src/store/store.js';

/** Best of 7 runs of `calls` calls of `run`, divided by `per` (the requests one call stands for). */
async function measure(name: string, calls: number, run: () => void | Promise<void>, per = 1): Promise<void> {
  let best = Infinity;
  for (let round = 0; round < 7; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await run();
    best = Math.min(best, Number(process.hrtime.bigint() - started) / calls / per);
  }
  process.stdout.write(`| ${name} | ${(best / 1000).toFixed(3)} |\n`);
}

process.stdout.write('| per request | µs |\n|---|---|\n');

// The access line, both ways into /dev/null.
const devNull = openSync('/dev/null', 'w');
// The service's own logger settings (its redaction of the Authorization header included).
const logger = pino(loggerOptions('info'), pino.destination({ dest: devNull, sync: true, minLength: 4096 }));
const request = { id: '2f1e7c56-8d4b-4f7e-9a39-3c8f2d1b6a40', method: 'POST', url: '/plants', ip: '127.0.0.1', caller: { name: 'bench' }, log: logger };
const reply = { statusCode: 200 };
await measure('access line: a pino child per request, then info(fields) (before)', 100_000, () => {
  logger.child({ reqId: request.id }).info(
    { method: request.method, path: request.url.split('?')[0], status: reply.statusCode, durationMs: 1.234, ip: request.ip, token: request.caller.name },
    'request',
  );
});
const bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]!;
const destination = pino.destination({ dest: devNull, sync: true, contentMode: 'buffer' });
const accessLines = new AccessLines(bindings);
// The service's way: each line written as bytes into a 16 KiB block, a write per block.
let block = Buffer.allocUnsafe(16_384);
let end = 0;
const blockLines = {
  room(bytes: number) {
    if (end + bytes > block.length) {
      destination.write(block.subarray(0, end) as unknown as string);
      block = Buffer.allocUnsafe(16_384);
      end = 0;
    }
    return block;
  },
  get end() {
    return end;
  },
  commit(bytes: number) {
    end += bytes;
  },
};
await measure('access line: written as bytes from remembered parts, 16 KiB a write (after)', 100_000, () => {
  accessLines.write(blockLines, request, reply.statusCode, 0.001234);
});

// The exact parse of a plant.
const bodies = Array.from({ length: 1000 }, (_, i) => `{"id":${2 ** 41 + i},"name":"Monstera deliciosa","tag":"aroid"}`);
let next = 0;
await measure('exact JSON parse of a plant: lossless-json (before)', 100_000, () => void parseAnyJson(bodies[next++ % 1000]!));
await measure('exact JSON parse of a plant: JSON.parse and BigInt of the id (after)', 100_000, () => void parseExactJson(bodies[next++ % 1000]!));

// The group commit, on a store that answers at once: 64 creates a batch, the cost per create. Both
// sides wait for their 64 answers with one promise each, so the difference is the write path's own.
const instant = { writeConcurrency: 1, createPlants: async (plants: readonly unknown[]) => plants.map(() => ({ outcome: 'created' as const })) };
const writer = new GroupCommit(instant as unknown as Store, { maxBatch: 1000, maxQueue: 10_000, concurrency: 1 });
let id = 0n;
const batchOf64 = (create: () => Promise<unknown>) => Promise.all(Array.from({ length: 64 }, create));
await measure('group commit, per create: a promise and an async handler (before)', 1000, async () => {
  await batchOf64(async () => (await new Promise<{ outcome: string }>((resolve, reject) => writer.add({ id: ++id, name: 'a' }, (error, result) => (error === undefined ? resolve(result!) : reject(error))))).outcome);
}, 64);
await measure('group commit, per create: a callback (after)', 1000, async () => {
  await batchOf64(() => new Promise((answered) => writer.add({ id: ++id, name: 'a' }, answered)));
}, 64);

// The metrics of every request.
const metrics = new Metrics();
const bound = metrics.plantCreates.labels({ outcome: 'created' });
await measure('creates counter: prom-client inc on a bound child (before)', 1_000_000, () => bound.inc());
await measure('creates counter: a plain number, added when read (after)', 1_000_000, () => metrics.countCreate('created'));
const { Histogram, Registry } = await import('prom-client');
const histogram = new Histogram({ name: 'd', help: 'd', labelNames: ['route', 'method', 'status'], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: [new Registry()] });
const child = histogram.labels({ route: '/plants', method: 'POST', status: 200 });
await measure("latency histogram: prom-client's observe on a bound child (before)", 1_000_000, () => child.observe(0.0012));
await measure('latency histogram: the series looked up and observed (after)', 1_000_000, () => metrics.requests.series('/plants', 'POST', 200).observe(0.0012));
process.exit(0);
