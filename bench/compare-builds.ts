// npx tsx bench/compare-builds.ts [--rounds N] [--seconds S] [--store sqlite|postgres] [--connections C] [--webhook] TARGET...
// CPU per request, req/s and median latency of several builds of the service (and the durable floor), measured
// in turn, round after round, under the benchmark's load (64 connections; 1 for a lone request's latency), each on a fresh store: the
// way to tell what a change to the write path bought on a shared machine, where one build measured
// now and another later differ by whatever else ran meanwhile. A TARGET is `floor`, `baseline` (the bare
// node:http server the benchmark's RSS goal is a ratio of), or a folder
// holding a build's bin/, dist/ and openapi/ with node_modules beside them (for an earlier commit:
// `git worktree add DIR COMMIT`, then `npm ci && npm run build` in it). Prints each round, then the
// medians and the lowest figure of each target (the lowest is the round least disturbed), and each
// target's highest peak RSS. A build's TARGET may end in `@multi-host`: that build is then given the
// database as a libpq multi-host URL (the same server twice, target_session_attrs=read-write), to
// measure what following a failover costs beside the same build on a single-host URL. With --webhook,
// every build's store has one subscription, delivering to the benchmark's receiver (on the load
// generator's core) while the load runs, as in `npm run bench -- --webhook`, and the deliveries a second
// that arrived during the measurement are reported too; a TARGET ending in `@unsubscribed` is that build
// without the subscription, so that one run tells what the subscription costs. A TARGET ending in
// `@undelivered` keeps the subscription but delivers nothing (WEBHOOK_DELIVERY=off): what writing the outbox costs. A TARGET ending in
// `@rate-limited` is that build under RATE_LIMIT=BENCH_RATE_LIMIT, a policy the load never exhausts, so
// that every create takes from its client's quota and one run tells what the limiter costs. `@traced` is that
// build with traces on, every request sampled, exported to an OTLP receiver that answers at once
// (bench/otlp-sink.mjs, on the load generator's core), so that one run tells what tracing costs. As in `npm run bench`,
// each measurement follows 2 s of warm-up on its own connections. On PostgreSQL the database's CPU a
// request is reported beside the server's (every `postgres` process on the machine). Stores are prepared
// with this checkout's migrations: a build older than the schema refuses to start on them.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { loadGenerator, requireAllAnswered } from './load/load-generator.js';
import { median } from './median.js';
import { cpuSince, postgresCpuSeconds } from './postgres-cpu.js';
import { binLaunch, freePort, unpinChildren } from './servers.js';
import { startOtlpSink, tracedSettings } from './otlp-sink.js';
import { freshStore, multiHostUrl, type StoreKind, subscribe } from './stores.js';
import { type BenchReceiver, startReceiver } from './webhook-receiver.js';

const ROOT = new URL('..', import.meta.url).pathname;
const { values, positionals: targets } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    store: { type: 'string', default: 'sqlite' },
    connections: { type: 'string', default: '64' },
    webhook: { type: 'boolean', default: false },
    'postgres-url': { type: 'string', default: process.env['PLANTSTORE_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test' },
  },
});
if (targets.length === 0) throw new Error('name at least one target: floor, or the folder of a build');
const FORMS = ['multi-host', 'unsubscribed', 'undelivered', 'rate-limited', 'traced'];
/** 100 million creates an hour: above any rate this machine reaches, so none is refused, and a slice lasts its whole second. */
const BENCH_RATE_LIMIT = '100000000/1h';
/** A target's folder (or `floor`, `baseline`) and the form after its `@`, if any: a form not in FORMS is refused. */
function parseTarget(target: string): { folder: string; form: string | undefined } {
  const [folder, form] = target.split('@') as [string, string | undefined];
  if (form !== undefined && !FORMS.includes(form)) throw new Error(`${target}: a target may end in ${FORMS.map((known) => `@${known}`).join(' or ')}, not @${form}`);
  return { folder, form };
}
targets.forEach(parseTarget);
const pinned = availableParallelism() >= 2;
const taskset = (cpu: number, command: string[]) => (pinned ? ['taskset', '-c', String(cpu), ...command] : command);

/** utime + stime of the process and all its threads, in seconds (fields 14 and 15 of /proc/PID/stat). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The process's peak resident memory so far, in MiB (VmHWM of /proc/PID/status). */
function peakRssMiB(pid: number): number {
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) / 1024;
}

const figures = new Map<string, { cpu: number[]; dbCpu: number[]; rps: number[]; p50: number[]; p99: number[]; rss: number[]; deliveries: number[] }>(
  targets.map((target) => [target, { cpu: [], dbCpu: [], rps: [], p50: [], p99: [], rss: [], deliveries: [] }]),
);
const onPostgres = values.store === 'postgres';
let idBase = 1;
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const target of targets) {
    const bench = await freshStore(values.store as StoreKind, values['postgres-url']);
    const port = await freePort();
    // A build runs with the flags and environment of its bin/plantstore's first line, as `npm run bench` runs the service.
    const { folder, form } = parseTarget(target);
    const build = target === 'floor' || target === 'baseline' ? undefined : binLaunch(`${folder}/bin/plantstore`);
    const command =
      target === 'floor'
        ? [process.execPath, `${ROOT}bench/baseline-server.mjs`, String(port), bench.url]
        : target === 'baseline'
          ? [process.execPath, `${ROOT}bench/baseline-server.mjs`, String(port)]
          : [process.execPath, ...build!.flags, `${folder}/bin/plantstore`, 'serve', '--port', String(port)];
    const [file, ...args] = taskset(0, command);
    const databaseUrl = form === 'multi-host' ? multiHostUrl(bench.url) : bench.url;
    const env = {
      ...process.env,
      ...build?.env,
      BASELINE_TOKEN: bench.token,
      DATABASE_URL: databaseUrl,
      ...(form === 'rate-limited' ? { RATE_LIMIT: BENCH_RATE_LIMIT } : {}),
      ...(form === 'undelivered' ? { WEBHOOK_DELIVERY: 'off' } : {}),
    };
    const sink = form === 'traced' ? await startOtlpSink(pinned ? 1 : undefined) : undefined;
    if (sink !== undefined) Object.assign(env, tracedSettings(sink.endpoint));
    let receiver: BenchReceiver | undefined;
    if (values.webhook && build !== undefined && form !== 'unsubscribed') {
      receiver = await startReceiver(pinned ? 1 : undefined);
      await receiver.useSecret(await subscribe(bench.url, receiver.url));
    }
    const child = spawn(file!, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
    try {
      const url = `http://127.0.0.1:${port}`;
      for (let attempt = 0; ; attempt++) {
        if (attempt === 200 || child.exitCode !== null) throw new Error(`${target} did not start`);
        if (await fetch(`${url}/healthz`).then(() => true, () => false)) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (pinned) unpinChildren(child.pid!);
      let before = 0;
      let databaseBefore = new Map<number, number>();
      let deliveredBefore: Promise<number> | undefined;
      const result = await loadGenerator.run({
        url,
        token: bench.token,
        connections: Number(values.connections),
        seconds: Number(values.seconds),
        warmupSeconds: 2,
        measurementStarts: () => {
          before = cpuSeconds(child.pid!);
          if (onPostgres) databaseBefore = postgresCpuSeconds();
          deliveredBefore = receiver?.stats().then((stats) => stats.received);
        },
        idBase: idBase++ * 2 ** 40,
        cpu: pinned ? 1 : undefined,
      });
      requireAllAnswered(result, target);
      const cpuUs = ((cpuSeconds(child.pid!) - before) * 1e6) / result.requests;
      // Read at once, before the deliveries that follow the load add to it.
      const databaseCpuUs = onPostgres ? (cpuSince(databaseBefore, postgresCpuSeconds()) * 1e6) / result.requests : undefined;
      if (databaseCpuUs !== undefined) figures.get(target)!.dbCpu.push(databaseCpuUs);
      // Deliveries that arrived while the measurement ran, over its length: the dispatcher's share under load.
      const deliveries = deliveredBefore === undefined ? undefined : ((await receiver!.stats()).received - (await deliveredBefore)) / Number(values.seconds);
      if (deliveries !== undefined) figures.get(target)!.deliveries.push(deliveries);
      figures.get(target)!.cpu.push(cpuUs);
      figures.get(target)!.rps.push(result.requestsPerSecond);
      figures.get(target)!.p50.push(result.p50Ms);
      figures.get(target)!.p99.push(result.p99Ms);
      const rss = peakRssMiB(child.pid!);
      figures.get(target)!.rss.push(rss);
      process.stdout.write(`round ${round}: ${target}: ${cpuUs.toFixed(1)} µs of CPU a request${databaseCpuUs === undefined ? '' : ` (+ ${databaseCpuUs.toFixed(1)} µs the database's)`}, ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50Ms.toFixed(3)} ms, p99 ${result.p99Ms.toFixed(2)} ms, peak RSS ${rss.toFixed(1)} MiB${deliveries === undefined ? '' : `, ${Math.round(deliveries)} deliveries/s`}\n`);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await receiver?.close();
      await sink?.close();
      await bench.cleanup();
    }
  }
}
process.stdout.write(
  `\n| target | CPU µs a request: median (lowest) |${onPostgres ? " the database's CPU µs a request: median |" : ''} req/s: median (highest) | p50 ms: median (lowest) | p99 ms: median (lowest) | peak RSS MiB: highest |${values.webhook ? ' deliveries/s under load: median |' : ''}\n|---|---|---|---|---|---|${onPostgres ? '---|' : ''}${values.webhook ? '---|' : ''}\n`,
);
for (const [target, { cpu, dbCpu, rps, p50, p99, rss, deliveries }] of figures) {
  process.stdout.write(
    `| ${target} | ${median(cpu).toFixed(1)} (${Math.min(...cpu).toFixed(1)}) |${onPostgres ? ` ${median(dbCpu).toFixed(1)} |` : ''} ${Math.round(median(rps))} (${Math.round(Math.max(...rps))}) | ${median(p50).toFixed(3)} (${Math.min(...p50).toFixed(3)}) | ${median(p99).toFixed(2)} (${Math.min(...p99).toFixed(2)}) | ${Math.max(...rss).toFixed(1)} |${values.webhook ? ` ${deliveries.length === 0 ? '' : Math.round(median(deliveries))} |` : ''}\n`,
  );
}
