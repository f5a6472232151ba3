import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

/** What one load run measured. */
export interface LoadResult {
  /** Requests answered during the run. */
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Connection errors and timeouts. */
  errors: number;
  /** Answers other than 2xx. */
  non2xx: number;
}

export interface LoadRun {
  url: string;
  token: string;
  connections: number;
  /** Seconds measured, after the warm-up. */
  seconds: number;
  /**
   * Seconds of load before the measurement, on the same connections (with wrk: in the same run),
   * whose answers are not measured; 0 or unset: none.
   */
  warmupSeconds?: number | undefined;
  /** Called as the measurement starts, once the warm-up is over: to read the server's counters then. */
  measurementStarts?: (() => unknown) | undefined;
  /** Ids of this run start above this, so that every request creates a new plant. */
  idBase: number;
  /** The core to run on, when the machine has more than one. */
  cpu?: number | undefined;
  /** Requests a second to pace the run to, over all its connections; unset: as fast as the server answers. */
  ratePerSecond?: number | undefined;
  /** Ends the run early, once its purpose is met; the result covers the time it ran. */
  signal?: AbortSignal | undefined;
}

/**
 * Throws when some of a run's requests failed: the figures of a build that answers 500 or 503
 * (a broken statement, say) are of its failures, and look faster than the real work.
 */
export function requireAllAnswered(result: LoadResult, what: string): void {
  const failed = result.errors + result.non2xx;
  if (failed > 0) throw new Error(`${what}: ${failed} of ${result.requests} requests failed (${result.non2xx} not 2xx, ${result.errors} errors); its figures would be of the failures`);
}

const WRK_SCRIPT = fileURLToPath(new URL('./post-plants.lua', import.meta.url));

export function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** wrk when it is installed (a C load generator costs the machine least), else autocannon in this process. */
export const loadGenerator: { name: string; run(run: LoadRun): Promise<LoadResult> } = hasCommand('wrk')
  ? { name: 'wrk', run: runWrk }
  : { name: 'autocannon', run: runAutocannon };

async function runWrk(run: LoadRun): Promise<LoadResult> {
  const warmup = run.warmupSeconds ?? 0;
  // One thread: the script paces each thread to the rate it is given.
  const rate = run.ratePerSecond === undefined ? [] : [String(run.ratePerSecond)];
  const script = [run.token, String(run.idBase), String(run.connections), String(warmup), ...rate];
  const args = ['-t1', `-c${run.connections}`, `-d${warmup + run.seconds}s`, '--timeout', '10s', '-s', WRK_SCRIPT, run.url, '--', ...script];
  const [command, commandArgs] = run.cpu === undefined ? ['wrk', args] : ['taskset', ['-c', String(run.cpu), 'wrk', ...args]];
  const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const closed = new Promise((resolve) => child.once('close', resolve));
  // wrk stops at SIGINT and still reports what it measured.
  const stop = () => child.kill('SIGINT');
  run.signal?.addEventListener('abort', stop, { once: true });
  // The script starts measuring warmup seconds after wrk starts: the counters are read then too.
  let started: unknown;
  const timer = setTimeout(() => (started = run.measurementStarts?.()), warmup * 1000);
  await closed;
  run.signal?.removeEventListener('abort', stop);
  clearTimeout(timer);
  await started;
  const line = /^RESULT (.*)$/m.exec(output)?.[1];
  if (line === undefined) throw new Error(`wrk printed no result:\n${output}`);
  const result = JSON.parse(line) as { requests: number; seconds: number; p50_us: number; p99_us: number; errors: number; non2xx: number };
  return {
    requests: result.requests,
    requestsPerSecond: result.requests / result.seconds,
    p50Ms: result.p50_us / 1000,
    p99Ms: result.p99_us / 1000,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

async function runAutocannon(run: LoadRun): Promise<LoadResult> {
  // autocannon has no way to leave the first seconds out of a run: its warm-up is a run of its own.
  if ((run.warmupSeconds ?? 0) > 0) await runAutocannon({ ...run, seconds: run.warmupSeconds!, warmupSeconds: 0, measurementStarts: undefined, idBase: run.idBase + 2 ** 39 });
  await run.measurementStarts?.();
  let next = run.idBase;
  const options: autocannon.Options = {
    url: `${run.url}/plants`,
    connections: run.connections,
    duration: run.seconds,
    // autocannon paces by the second: each connection's share of a second's requests goes out at
    // once, then it waits for the next second. Coarser than wrk's script, which paces every request.
    ...(run.ratePerSecond === undefined ? {} : { overallRate: Math.max(1, Math.round(run.ratePerSecond)) }),
    method: 'POST',
    headers: { authorization: `Bearer ${run.token}`, 'content-type': 'application/json' },
    requests: [{ setupRequest: (request) => ({ ...request, body: `{"id":${++next},"name":"Monstera deliciosa","tag":"aroid"}` }) }],
  };
  // The callback form hands back the instance, whose stop() ends the run early.
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(options, (error, finished) => (error ? reject(error) : resolve(finished)));
    run.signal?.addEventListener('abort', () => instance.stop(), { once: true });
  });
  return {
    requests: result.requests.total,
    requestsPerSecond: result.requests.total / (result.duration || run.seconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}
