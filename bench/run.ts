// npm run bench: the service against a bare node:http baseline on the same
// machine, with the same load. `npm run bench -- --help` for the options.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { hasCommand, type LoadResult, loadGenerator } from './load/load-generator.js';
import { type RunningServer, startBaseline, startDeliverer, startService } from './servers.js';
import { fsyncTimesMs } from './disk-sync.js';
import { reportPicture } from './report-picture.js';
import { Progress } from '../src/cli/progress.js';
import { type BenchStore, freshStore, preload, type StoreKind, subscribe } from './stores.js';
import { median } from './median.js';
import { startOtlpSink, tracedSettings } from './otlp-sink.js';
import { startReceiver } from './webhook-receiver.js';
import { measureWebhookRound, type WebhookPhases, type WebhookRound } from './webhook-round.js';
import { webhookReport } from './webhook-report.js';

const HELP = `Usage: npm run bench -- [options]

  --store sqlite|postgres   the service's store (default sqlite)
  --connections N           connections of the loaded scenario (default 64)
  --duration S              seconds of each measurement (default 10)
  --warmup S                seconds of load before each measurement (default 2)
  --rounds N                rounds, each measuring every server in a rotating order (default 3)
  --preload N               also measure a store already holding N plants
  --postgres-url URL        the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test)
  --env NAME=VALUE          a setting for the service (repeatable), e.g. --env LOG_LEVEL=warn to
                            measure what the access log costs; the defaults otherwise
  --webhook                 also measure webhook delivery, in the same rounds, to a receiver process
                            (pinned beside the load generator) that verifies every delivery's signature
                            and times it: creates saturating the service with and without a subscription,
                            a backlog drained by one deliverer and by two, a steady create rate, and
                            deliverers killed under load (bench/webhook-round.ts)
  --traced                  also measure the service with traces on, in the same rounds: every request
                            sampled, exported over OTLP/HTTP to a receiver that answers at once
                            (bench/otlp-sink.mjs, pinned beside the load generator)
  --trace-ratio R           with --traced: sample new traces at the ratio R (parentbased_traceidratio)
                            instead of every request
  --steady-seconds S        with --webhook: seconds of the steady phase, at 2,500 creates a second (default 60)
  --drain-limit S           with --webhook: the most seconds any wait for deliveries lasts (default 120)
  --smoke                   a few seconds: checks that everything runs and reports; asserts nothing
`;

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    connections: { type: 'string', default: '64' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    preload: { type: 'string', default: '0' },
    'postgres-url': { type: 'string', default: process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
    env: { type: 'string', multiple: true, default: [] },
    smoke: { type: 'boolean', default: false },
    webhook: { type: 'boolean', default: false },
    traced: { type: 'boolean', default: false },
    'trace-ratio': { type: 'string' },
    'steady-seconds': { type: 'string', default: '60' },
    'drain-limit': { type: 'string', default: '120' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(HELP);
  process.exit(0);
}
if (values.store !== 'sqlite' && values.store !== 'postgres') throw new Error('--store must be sqlite or postgres');
const store: StoreKind = values.store;
const serviceSettings = Object.fromEntries(
  values.env.map((setting) => {
    const [name = '', ...value] = setting.split('=');
    if (!/^[A-Z][A-Z0-9_]*$/.test(name) || value.length === 0) throw new Error(`--env wants NAME=VALUE, got ${JSON.stringify(setting)}`);
    return [name, value.join('=')];
  }),
);
const smoke = values.smoke;
const options = {
  connections: Number(values.connections),
  duration: smoke ? 1 : Number(values.duration),
  warmup: smoke ? 0 : Number(values.warmup),
  rounds: smoke ? 1 : Number(values.rounds),
  preload: smoke ? Math.min(Number(values.preload), 1000) : Number(values.preload),
  steadySeconds: smoke ? 1 : Number(values['steady-seconds']),
  drainLimitSeconds: smoke ? 10 : Number(values['drain-limit']),
};
/** The phases of --webhook, with the issue's figures (see webhook-round.ts); a smoke run only checks they run. */
const webhookPhases: WebhookPhases = {
  saturationSeconds: smoke ? 1 : 30,
  saturationConnections: 32,
  drainMessages: smoke ? 1000 : 40_000,
  steadyPerSecond: 2500,
  steadySeconds: options.steadySeconds,
  kills: smoke ? 2 : 20,
  killEveryMs: smoke ? 300 : 1000,
  killedPerSecond: 1000,
  drainLimitMs: options.drainLimitSeconds * 1000,
};

if (!(options.steadySeconds > 0) || !(options.drainLimitSeconds > 0)) throw new Error('--steady-seconds and --drain-limit want a number of seconds above 0');

// The server on core 0, the load generator on core 1, when there are two cores to pin to.
const pinning = availableParallelism() >= 2 && hasCommand('taskset');
const serverCpu = pinning ? 0 : undefined;
const loadCpu = pinning ? 1 : undefined;

/** One load run, with the server's CPU time over it divided by the requests it answered. */
interface Scenario extends LoadResult {
  cpuUsPerRequest: number;
}

interface Measured {
  many: Scenario;
  lone: Scenario;
  peakRssMiB: number;
}

let nextIdBase = 1;
/** Every load run gets its own range of ids (2^40 each), so that each request creates a plant. */
function idBase(): number {
  return nextIdBase++ * 2 ** 40;
}

/**
 * A load run against `server` with its own ids: a warm-up first when `warm` (on the run's own
 * connections, see bench/load/post-plants.lua), then the measurement, with `measurementStarts`
 * called as it starts.
 */
async function load(server: RunningServer, token: string, connections: number, warm: boolean, measurementStarts?: () => Promise<void>): Promise<Scenario> {
  // Throughput on a shared machine moves with whatever else runs; the CPU a request costs the server moves far less.
  let cpuBefore = server.cpuSeconds();
  const result = await loadGenerator.run({
    url: server.url,
    token,
    connections,
    seconds: options.duration,
    warmupSeconds: warm ? options.warmup : 0,
    measurementStarts: async () => {
      cpuBefore = server.cpuSeconds();
      await measurementStarts?.();
    },
    idBase: idBase(),
    cpu: loadCpu,
  });
  const cpuSeconds = server.cpuSeconds() - cpuBefore;
  return { ...result, cpuUsPerRequest: result.requests === 0 ? NaN : (cpuSeconds * 1e6) / result.requests };
}

async function measure(server: RunningServer, token: string): Promise<Measured> {
  const many = await load(server, token, options.connections, true);
  const lone = await load(server, token, 1, false);
  return { many, lone, peakRssMiB: server.peakRssMiB() };
}

/** Runs `work` against the service started on `bench`'s store, and stops it. */
async function withService<T>(bench: BenchStore, work: (server: RunningServer) => Promise<T>, settings: Record<string, string> = {}): Promise<T> {
  const server = await startService({ ...serviceSettings, ...settings, DATABASE_URL: bench.url }, serverCpu);
  try {
    return await work(server);
  } finally {
    await server.stop();
  }
}

/** Runs `work` on a new, empty store of the kind measured, and removes the store. */
async function withFreshStore<T>(work: (bench: BenchStore) => Promise<T>): Promise<T> {
  const bench = await freshStore(store, values['postgres-url']);
  try {
    return await work(bench);
  } finally {
    await bench.cleanup();
  }
}

function measureService(): Promise<Measured> {
  return withFreshStore((bench) => withService(bench, (server) => measure(server, bench.token)));
}

/** One round of webhook delivery's phases (webhook-round.ts), with a receiver of its own on the load generator's core. */
async function measureWebhook(): Promise<WebhookRound> {
  const receiver = await startReceiver(loadCpu);
  try {
    return await measureWebhookRound({
      phases: webhookPhases,
      receiver,
      withFreshStore,
      subscribe: (bench) => subscribe(bench.url, receiver.url),
      preload: (bench, count) => preload(bench.url, count, () => undefined),
      startService: (bench, settings = {}) => startService({ ...serviceSettings, ...settings, DATABASE_URL: bench.url }, serverCpu),
      // On the server's core, apart from the receiver's and the load generator's.
      startDeliverer: (bench, settings = {}) => startDeliverer({ ...serviceSettings, ...settings, DATABASE_URL: bench.url }, serverCpu),
      load: (server, bench, run) => loadGenerator.run({ url: server.url, token: bench.token, idBase: idBase(), cpu: loadCpu, ...run }),
      log: (line) => process.stderr.write(`  webhook ${line}\n`),
    });
  } finally {
    await receiver.close();
  }
}

/** The service with traces on, every request sampled, exported to a receiver that answers at once, on the load generator's core. */
async function measureTracedService(): Promise<Measured> {
  const sink = await startOtlpSink(loadCpu);
  try {
    return await withFreshStore((bench) => withService(bench, (server) => measure(server, bench.token), tracedSettings(sink.endpoint, values['trace-ratio'])));
  } finally {
    await sink.close();
  }
}

/** The durable floor: the baseline that also commits every plant to a fresh store (see baseline-server.mjs). */
function measureFloor(): Promise<Measured> {
  return withFreshStore((bench) => measureBaseline(bench.url));
}

/** The baseline; with `databaseUrl`, the durable floor on that store. */
async function measureBaseline(databaseUrl?: string): Promise<Measured> {
  const server = await startBaseline('ps_baseline', serverCpu, databaseUrl);
  try {
    return await measure(server, 'ps_baseline');
  } finally {
    await server.stop();
  }
}

/** Throughput at the loaded scenario on a store that already holds `count` plants, one round each way. */
function measurePreloaded(count: number): Promise<number> {
  return withFreshStore(async (bench) => {
    const progress = new Progress(process.stderr, 'preload', BigInt(count));
    await preload(bench.url, count, (done) => progress.update(BigInt(done), done === count));
    const preloaded: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const result = await withService(bench, (server) => load(server, bench.token, options.connections, true));
      preloaded.push(result.requestsPerSecond);
    }
    return median(preloaded);
  });
}

function medianOf(runs: Measured[], pick: (run: Measured) => number): number {
  return median(runs.map(pick));
}

const allTargets = ['service', 'baseline', 'floor', 'webhook', 'traced'] as const;
type Target = (typeof allTargets)[number];
const targetNames: readonly Target[] = allTargets.filter((target) => (target === 'webhook' ? values.webhook : target === 'traced' ? values.traced : true));
const measurers: Record<Exclude<Target, 'webhook'>, () => Promise<Measured>> = {
  service: measureService,
  baseline: () => measureBaseline(),
  floor: measureFloor,
  traced: measureTracedService,
};
const measured: Record<Exclude<Target, 'webhook'>, Measured[]> = { service: [], baseline: [], floor: [], traced: [] };
const webhook: WebhookRound[] = [];
for (let round = 1; round <= options.rounds; round++) {
  // Each round starts with the next target, so that none is always measured first.
  const order = targetNames.map((_, i) => targetNames[(i + round - 1) % targetNames.length]!);
  for (const target of order) {
    process.stderr.write(`round ${round}/${options.rounds}: ${target}\n`);
    if (target === 'webhook') webhook.push(await measureWebhook());
    else measured[target].push(await measurers[target]());
  }
}
const { service, baseline, floor, traced } = measured;
const preloadResult = options.preload > 0 ? await measurePreloaded(options.preload) : undefined;
const fsyncSamples = smoke ? 20 : 200;
const fsyncMs = median(fsyncTimesMs(fsyncSamples));

// The report.
const servers: [string, Measured[]][] = [
  ['baseline', baseline],
  ['durable floor', floor],
  ['service', service],
  ...(values.traced ? [['service, traced', traced] as [string, Measured[]]] : []),
];
const rows = (scenario: 'many' | 'lone') => servers.map(([name, runs]) => row(name, runs, scenario)).join('\n');
const row = (name: string, runs: Measured[], scenario: 'many' | 'lone') => {
  const pick = (field: keyof Scenario) => medianOf(runs, (run) => run[scenario][field]);
  const sum = (field: keyof Scenario) => runs.reduce((total, run) => total + run[scenario][field], 0);
  return `| ${name} | ${scenario === 'many' ? options.connections : 1} | ${Math.round(pick('requestsPerSecond'))} | ${pick('cpuUsPerRequest').toFixed(1)} | ${pick('p50Ms').toFixed(2)} | ${pick('p99Ms').toFixed(2)} | ${sum('errors')} | ${sum('non2xx')} | ${medianOf(runs, (run) => run.peakRssMiB).toFixed(1)} |`;
};
/** Every round of the loaded scenario, so that a reader sees how far the rounds moved. */
const roundRows = servers
  .map(([name, runs]) => {
    const each = (pick: (run: Measured) => number, digits: number) => runs.map((run) => pick(run).toFixed(digits)).join(' / ');
    return `| ${name} | ${each((run) => run.many.requestsPerSecond, 0)} | ${each((run) => run.many.cpuUsPerRequest, 1)} |`;
  })
  .join('\n');

/** What the service is judged on, against the floor's (and for memory the baseline's) runs of the same run. */
function figures(runs: Measured[], against: Measured[]) {
  const ratio = (pick: (run: Measured) => number) => medianOf(runs, pick) / medianOf(against, pick);
  return {
    throughput: ratio((run) => run.many.requestsPerSecond),
    cpu: ratio((run) => run.many.cpuUsPerRequest),
    p99: ratio((run) => run.many.p99Ms),
    lone: medianOf(runs, (run) => run.lone.p50Ms) - medianOf(against, (run) => run.lone.p50Ms),
    rss: medianOf(runs, (run) => run.peakRssMiB) / medianOf(baseline, (run) => run.peakRssMiB),
  };
}
type Figures = ReturnType<typeof figures>;

const times = (value: number) => `${value.toFixed(2)} ×`;
const goals: { name: string; goal: string; figure: (f: Figures) => number; show: (value: number) => string; met: (value: number) => boolean }[] = [
  { name: `throughput at ${options.connections} connections`, goal: '≥ 0.85 × floor', figure: (f) => f.throughput, show: times, met: (v) => v >= 0.85 },
  { name: `CPU per request at ${options.connections} connections`, goal: '≤ 1.2 × floor', figure: (f) => f.cpu, show: times, met: (v) => v <= 1.2 },
  { name: `p99 latency at ${options.connections} connections`, goal: '≤ 1.5 × floor', figure: (f) => f.p99, show: times, met: (v) => v <= 1.5 },
  {
    name: 'median latency of a lone request (1 connection)',
    goal: '≤ floor + 0.03 ms',
    figure: (f) => f.lone,
    show: (v) => `${v >= 0 ? '+' : ''}${v.toFixed(3)} ms`,
    met: (v) => v <= 0.03,
  },
  { name: 'peak RSS under load', goal: '≤ 1.3 × baseline', figure: (f) => f.rss, show: times, met: (v) => v <= 1.3 },
];
const verdict = (met: boolean) => (met ? 'met' : 'not met');
const serviceFigures = figures(service, floor);
const targets = goals.map(({ name, goal, figure, show, met }) => {
  const value = figure(serviceFigures);
  return `| ${name} | ${goal} | ${show(value)} | ${verdict(met(value))} |`;
});
if (preloadResult !== undefined) {
  const preloadedRatio = preloadResult / medianOf(service, (run) => run.many.requestsPerSecond);
  targets.push(
    `| throughput with ${options.preload.toLocaleString('en')} plants stored | ≥ 0.85 × empty store | ${preloadedRatio.toFixed(2)} × (${Math.round(preloadResult)} req/s) | ${verdict(preloadedRatio >= 0.85)} |`,
  );
}
/** The floor and the service against the bare baseline, for the record: what the store costs, and what the service does. */
const againstBaseline = (['durable floor', 'service'] as const).map((name) => {
  const f = figures(name === 'service' ? service : floor, baseline);
  return `| ${name} | ${times(f.throughput)} | ${times(f.cpu)} | ${times(f.p99)} | ${f.lone >= 0 ? '+' : ''}${f.lone.toFixed(3)} ms |`;
});

if (values.traced) {
  // Tracing's goal: the traced service at most 10 % below the untraced one of the same run, against the floor and in CPU.
  const tracedFigures = figures(traced, floor);
  const compared = `service/floor ${tracedFigures.throughput.toFixed(2)} × traced, ${serviceFigures.throughput.toFixed(2)} × untraced`;
  targets.push(
    `| throughput at ${options.connections} connections, traced | ≥ 0.90 × untraced | ${(tracedFigures.throughput / serviceFigures.throughput).toFixed(2)} × (${compared}) | ${verdict(tracedFigures.throughput / serviceFigures.throughput >= 0.9)} |`,
    `| CPU per request at ${options.connections} connections, traced | ≤ 1.10 × untraced | ${(tracedFigures.cpu / serviceFigures.cpu).toFixed(2)} × (${medianOf(traced, (run) => run.many.cpuUsPerRequest).toFixed(1)} µs against ${medianOf(service, (run) => run.many.cpuUsPerRequest).toFixed(1)}) | ${verdict(tracedFigures.cpu / serviceFigures.cpu <= 1.1)} |`,
  );
}
const webhookPart = values.webhook ? webhookReport(webhook, webhookPhases, loadGenerator.name) : undefined;
if (webhookPart !== undefined) targets.push(...webhookPart.goalRows);
const targetNotes =
  (values.webhook
    ? `\nWebhook: delivery to a receiver process that verifies each delivery (\`bench/webhook-receiver.mjs\`); its phases and goals are in the section below the tables, its goal rows here.\n`
    : '') +
  (values.traced
    ? `\nTraced: the service with traces on (${values['trace-ratio'] === undefined ? 'OTEL_TRACES_SAMPLER=always_on' : `OTEL_TRACES_SAMPLER=parentbased_traceidratio at ${values['trace-ratio']}`}), exporting over OTLP/HTTP in protobuf to a receiver that answers at once (\`bench/otlp-sink.mjs\`, on the load generator's core).\n`
    : '');

const date = new Date().toISOString().slice(0, 10);
// A run with other settings keeps its own files, beside the defaults' ones.
const settingsSuffix =
  values.env.map((setting) => `-${setting.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`).join('') + (values.webhook ? '-webhook' : '') + (values.traced ? `-traced${values['trace-ratio'] === undefined ? '' : `-${values['trace-ratio']}`}` : '');
const line = `node${process.versions.node.split('.')[0]}`;
const pictureName = `${date}-${line}-${store}${settingsSuffix}.svg`;
const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim();
const report = `# Benchmark: ${store}, ${date}${smoke ? ' (smoke run: figures mean nothing)' : ''}

Command: \`${command}\`
Machine: ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node.js ${process.version}.
Load: ${loadGenerator.name}, \`POST /plants\` with a unique id and a valid token on every request; ${options.rounds} rounds, each measuring ${targetNames.join(', ')} in a rotating order, each on a fresh store${store === 'postgres' ? ' (the cluster checkpointed first)' : ''}, ${options.warmup} s warm-up on the measurement's own connections (its answers not measured), ${options.duration} s a measurement; medians of the rounds. ${pinning ? 'Server pinned to core 0 and load generator to core 1 (taskset).' : 'No pinning (one core, or no taskset).'}
Baseline: \`bench/baseline-server.mjs\`, bare \`node:http\` that parses the JSON and compares the token to a constant, with no validation and no storage.
Durable floor: the same server that also stores every plant before answering, with the service's group commit (${store === 'sqlite' ? 'SQLite in WAL mode with synchronous=FULL' : 'PostgreSQL, one multi-row INSERT a batch, up to 9 batches in flight'}), and no validation, logging or metrics: the most a durable write can do on this machine, and what the goals are ratios of.
Service: \`bin/plantstore serve\` with ${values.env.length > 0 ? `its defaults but ${values.env.join(', ')}` : 'its defaults (log level info)'}, logs written to /dev/null, ${store === 'sqlite' ? 'SQLite in WAL mode with synchronous=FULL' : 'PostgreSQL, one process'}, group commit.
Disk: a 4 KiB write and fsync in ${tmpdir()} takes ${fsyncMs.toFixed(3)} ms (median of ${fsyncSamples}); every durable commit waits for at least one, so no answer to a lone request can be faster than this.${targetNotes}

CPU µs/req: user + system CPU time of the server's processes and threads (from /proc) over a measurement, divided by the requests it answered; it moves far less between rounds than req/s on a shared machine.

| server | connections | req/s | CPU µs/req | p50 ms | p99 ms | errors | non-2xx | peak RSS MiB |
|---|---|---|---|---|---|---|---|---|
${rows('many')}
${rows('lone')}

Each round at ${options.connections} connections (round 1 / 2 / ...):

| server | req/s | CPU µs/req |
|---|---|---|
${roundRows}

The goals: the service against the durable floor of the same run.

| target | goal | service | |
|---|---|---|---|
${targets.join('\n')}

Against the bare baseline:

| server | throughput | CPU per request | p99 | lone median |
|---|---|---|---|---|
${againstBaseline.join('\n')}

${webhookPart === undefined ? '' : `${webhookPart.section}\n`}![req/s and CPU per request of baseline, durable floor and service](${pictureName})
`;

process.stdout.write(`\n${report}`);
const resultsDir = smoke ? mkdtempSync(join(tmpdir(), 'plantstore-bench-smoke-')) : fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `${date}-${line}-${store}${settingsSuffix}.md`);
writeFileSync(file, report);
writeFileSync(
  join(resultsDir, pictureName),
  reportPicture({
    title: `${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${options.connections} connections, ${date}: medians of ${options.rounds} rounds`,
    bars: servers.map(([name, runs]) => ({
      name,
      requestsPerSecond: medianOf(runs, (run) => run.many.requestsPerSecond),
      cpuUsPerRequest: medianOf(runs, (run) => run.many.cpuUsPerRequest),
    })),
  }),
);
process.stderr.write(`written to ${file} and ${pictureName}\n`);
// The webhook figures once more at the end, where a reader of the terminal looks first.
if (webhookPart !== undefined) {
  process.stdout.write(`\n${webhookPart.section}\n| target | goal | service | |\n|---|---|---|---|\n${webhookPart.goalRows.join('\n')}\n`);
}
