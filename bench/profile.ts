// npx tsx bench/profile.ts [--store sqlite|postgres] [--seconds S] [--connections C] [--floor] [--webhook] [--traced [--trace-ratio R]] [--bin PATH]: a CPU
// profile of the service (or, with --floor, of the durable floor; with --webhook, of the service with one
// webhook subscription delivering to a receiver process on the load generator's core; with --traced, with every request
// traced and exported to bench/otlp-sink.mjs there, its own tracing code and the SDK each a layer) under the benchmark's load (wrk,
// 64 connections, or 1 for a lone request's), read by layer: the time its main thread spent in each, in µs a request, beside
// the CPU time a request cost the whole process (from /proc). --bin runs another build of
// bin/plantstore (a copy of an earlier commit's bin/, dist/ and openapi/), to compare before and after.
// Only the samples taken during the measurement count, after 2 s of warm-up as in npm run bench: start-up's
// loading and compiling are left out. The .cpuprofile is kept (its path is printed) for a closer look in Chrome's DevTools.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadGenerator, requireAllAnswered } from './load/load-generator.js';
import { startOtlpSink, tracedSettings } from './otlp-sink.js';
import { binLaunch, freePort } from './servers.js';
import { freshStore, type StoreKind, subscribe } from './stores.js';
import { startReceiver } from './webhook-receiver.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Seconds of load before the measurement, on its connections, as in npm run bench. */
const WARMUP_SECONDS = 2;
const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    floor: { type: 'boolean', default: false },
    webhook: { type: 'boolean', default: false },
    traced: { type: 'boolean', default: false },
    'trace-ratio': { type: 'string' },
    bin: { type: 'string', default: `${ROOT}/bin/plantstore` },
    'postgres-url': { type: 'string', default: process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});

/**
 * Where a function's own time goes, by the file it is in: the first layer whose pattern matches. The
 * service's layers are its folders under dist/ (as src/ has them), each with the libraries it uses.
 */
const LAYERS: [string, RegExp][] = [
  ["tracing/ (the service's own span code)", /\/dist\/tracing\//],
  ["OpenTelemetry's SDK and exporter", /@opentelemetry|protobufjs/],
  ['webhooks/ (dispatcher, outbox)', /\/dist\/webhooks\/|\/dist\/store\/[a-z]+\/webhook-store/],
  ['plants/ (create, group commit)', /\/dist\/plants\//],
  ['store/sqlite/ and better-sqlite3', /better-sqlite3|\/dist\/store\/sqlite\//],
  ['store/postgres/ and pg', /node_modules\/pg|\/dist\/store\/postgres\//],
  ['contract/ (exact parse, Ajv, serialisers)', /\/dist\/contract\/|lossless-json|secure-json-parse|node_modules\/(ajv|fast-json-stringify|fast-uri)/],
  ['observability/ (logger, access line, metrics), pino, prom-client', /\/dist\/observability\/|pino|sonic-boom|prom-client/],
  ['tokens/', /\/dist\/tokens\//],
  ['http/fast-path/ and http/server/ (the fast path, sockets, limits)', /\/dist\/http\/(fast-path|server)\//],
  ['http/fastify/ and Fastify', /\/dist\/http\/fastify\/|node_modules\/(fastify|find-my-way|avvio|@fastify|toad-cache|fast-querystring)/],
  ['http/ (create pipeline, headers, request id)', /\/dist\/http\/|node:internal\/crypto/],
  ['app.ts, config, errors', /\/dist\/[a-z-]+\.js/],
  ["the floor's own handler", /baseline-server/],
  ['node:http, net, streams, events, timers', /^node:/],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

const bench = await freshStore(values.store as StoreKind, values['postgres-url']);
// On the load generator's core, as in npm run bench.
const receiver = values.webhook ? await startReceiver(1) : undefined;
if (receiver !== undefined) await receiver.useSecret(await subscribe(bench.url, receiver.url));
const sink = values.traced ? await startOtlpSink(1) : undefined;
const dir = mkdtempSync(join(tmpdir(), 'plantstore-profile-'));
const port = await freePort();
const profiling = ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${dir}`];
// The floor has no signal handler of its own; this one lets it exit normally, which writes the profile.
const floorExit = `--import=data:text/javascript,process.on('SIGTERM',()=>process.exit(0))`;
const command = values.floor
  ? [...profiling, floorExit, `${ROOT}/bench/baseline-server.mjs`, String(port), bench.url]
  : // The flags of bin/plantstore's first line, which a plain `node bin/plantstore` would not apply.
    [...profiling, ...binLaunch(values.bin).flags, values.bin, 'serve', '--port', String(port)];
const child = spawn('taskset', ['-c', '0', process.execPath, ...command], {
  // And the environment that line sets.
  env: {
    ...process.env,
    ...(values.floor ? {} : binLaunch(values.bin).env),
    ...(sink === undefined ? {} : tracedSettings(sink.endpoint, values['trace-ratio'])),
    BASELINE_TOKEN: bench.token,
    DATABASE_URL: bench.url,
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
try {
  await until(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status > 0);
  let cpuBefore = 0;
  // Start-up and the first deliveries load and compile code: counted, two loader functions alone took about 2 µs a request (--webhook, 10 s).
  let measuredFrom = 0;
  const result = await loadGenerator.run({
    url: `http://127.0.0.1:${port}`,
    token: bench.token,
    connections: Number(values.connections),
    seconds: Number(values.seconds),
    warmupSeconds: WARMUP_SECONDS,
    measurementStarts: () => {
      cpuBefore = cpuSeconds(child.pid!);
      measuredFrom = monotonicMicroseconds();
    },
    idBase: 2 ** 41,
    cpu: 1,
  });
  const measuredUntil = monotonicMicroseconds();
  requireAllAnswered(result, values.floor ? 'the floor' : values.bin);
  const cpuUsPerRequest = ((cpuSeconds(child.pid!) - cpuBefore) * 1e6) / result.requests;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  const file = join(dir, readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))!);
  report(file, { from: measuredFrom, until: measuredUntil }, result.requests, result.requests / result.requestsPerSecond, cpuUsPerRequest);
} finally {
  if (child.exitCode === null) child.kill('SIGKILL');
  await receiver?.close();
  await sink?.close();
  await bench.cleanup();
}

/**
 * Now on the clock a .cpuprofile's times are read on: V8's and libuv's monotonic clocks are both
 * CLOCK_MONOTONIC on Linux, in µs, and the same for every process of the machine.
 */
function monotonicMicroseconds(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** `measured`: when the measurement ran, on the profile's clock; only the samples taken then count. */
function report(file: string, measured: { from: number; until: number }, requests: number, seconds: number, cpuUsPerRequest: number): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number };
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  // A native function (no file) counts towards the JavaScript that called it; GC and the idle loop are their own.
  const layerOf = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const { url, functionName } = nodes.get(at)!.callFrame;
      if (url === '') {
        if (functionName.startsWith('(')) return functionName;
        continue;
      }
      return LAYERS.find(([, pattern]) => pattern.test(url))?.[0] ?? 'other';
    }
    return 'other';
  };
  const microseconds = new Map<string, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at < measured.from || at >= measured.until) return;
    const layer = layerOf(id);
    microseconds.set(layer, (microseconds.get(layer) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  if (microseconds.size === 0) throw new Error(`no sample of the profile falls within the measurement: ${file}`);
  microseconds.delete('(idle)');
  const busy = [...microseconds.values()].reduce((sum, value) => sum + value, 0);
  process.stdout.write(
    `${values.floor ? 'durable floor' : values.webhook ? 'service with one webhook subscription' : values.traced ? 'service, every request traced' : 'service'} on ${values.store}: ${Math.round(requests / seconds)} req/s, ${cpuUsPerRequest.toFixed(1)} µs of CPU a request (/proc, profiling included); profile: ${file}\n\n`,
  );
  process.stdout.write('| layer | µs a request | share |\n|---|---|---|\n');
  for (const [layer, value] of [...microseconds].sort((a, b) => b[1] - a[1])) {
    process.stdout.write(`| ${layer} | ${(value / requests).toFixed(2)} | ${((100 * value) / busy).toFixed(1)}% |\n`);
  }
  process.stdout.write(`| all (the main thread's busy time, waits for the disk included) | ${(busy / requests).toFixed(2)} | 100% |\n`);
}

/** utime + stime of the process (all its threads), in seconds: fields 14 and 15 of /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function until(ready: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    if (await ready().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the server did not answer');
}
