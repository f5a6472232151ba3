// npx tsx bench/connection-burst.ts [--rounds N] [--store sqlite|postgres] [--connections C] [--burst B]
// How long clients that connect at once wait for their first answer while a process is saturated:
// the durable floor (one listening socket) and the service (eight where Node.js has reusePort,
// src/http/server/acceptors.ts), each under wrk at C connections (64), each round on a fresh store.
// B clients (64) connect at once, each posting one plant; printed: the median and the slowest of
// their first answers, in ms, and the load's own figures. libuv accepts one connection per turn of
// the event loop on each listening socket, so on one socket the slowest waits B turns.
import { connect } from 'node:net';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { loadGenerator } from './load/load-generator.js';
import { median } from './median.js';
import { type RunningServer, startBaseline, startService } from './servers.js';
import { freshStore, type StoreKind } from './stores.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    store: { type: 'string', default: 'sqlite' },
    connections: { type: 'string', default: '64' },
    burst: { type: 'string', default: '64' },
    'postgres-url': { type: 'string', default: process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});
const pinned = availableParallelism() >= 2;
const [serverCpu, loadCpu] = pinned ? [0, 1] : [undefined, undefined];
/** Seconds of load before the burst, so that it meets a saturated process, and after it. */
const LOAD_BEFORE_S = 2;
const LOAD_SECONDS = 4;

/** Opens `count` connections at once, each posting one plant; the ms from the start to each first answer. */
function burst(url: string, token: string, count: number, firstId: number): Promise<number[]> {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  return Promise.all(
    Array.from(
      { length: count },
      (_, i) =>
        new Promise<number>((resolve, reject) => {
          const body = `{"id":${firstId + i},"name":"burst"}`;
          const socket = connect(Number(port), hostname, () =>
            socket.write(
              `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
            ),
          );
          socket.setTimeout(30_000, () => socket.destroy(new Error('no answer within 30 s')));
          socket.once('error', reject);
          socket.once('data', () => {
            resolve(performance.now() - started);
            socket.destroy();
          });
        }),
    ),
  );
}

async function measure(target: 'floor' | 'service', round: number): Promise<{ median: number; slowest: number; rps: number }> {
  const bench = await freshStore(values.store as StoreKind, values['postgres-url']);
  let server: RunningServer | undefined;
  try {
    server = target === 'floor' ? await startBaseline('ps_baseline', serverCpu, bench.url) : await startService({ DATABASE_URL: bench.url }, serverCpu);
    const token = target === 'floor' ? 'ps_baseline' : bench.token;
    const load = loadGenerator.run({ url: server.url, token, connections: Number(values.connections), seconds: LOAD_SECONDS, idBase: (round + 1) * 2 ** 40, cpu: loadCpu });
    await new Promise((resolve) => setTimeout(resolve, LOAD_BEFORE_S * 1000));
    const waits = await burst(server.url, token, Number(values.burst), (round + 1) * 2 ** 40 + 2 ** 39);
    const loaded = await load;
    return { median: median(waits), slowest: Math.max(...waits), rps: loaded.requestsPerSecond };
  } finally {
    await server?.stop();
    await bench.cleanup();
  }
}

const figures = { floor: [] as number[][], service: [] as number[][] };
for (let round = 0; round < Number(values.rounds); round++) {
  for (const target of ['floor', 'service'] as const) {
    const result = await measure(target, round);
    figures[target].push([result.median, result.slowest]);
    process.stdout.write(`round ${round + 1} ${target}: first answers median ${result.median.toFixed(1)} ms, slowest ${result.slowest.toFixed(1)} ms; load ${Math.round(result.rps)} req/s\n`);
  }
}
for (const target of ['floor', 'service'] as const) {
  const medians = median(figures[target].map(([m]) => m!));
  const slowest = median(figures[target].map(([, s]) => s!));
  process.stdout.write(`${target}: median of rounds: first answers median ${medians.toFixed(1)} ms, slowest ${slowest.toFixed(1)} ms\n`);
}
