import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { runMain } from './in-process-cli.js';
import { within } from './until.js';

export const BIN = fileURLToPath(new URL('../../bin/plantstore', import.meta.url));

/** The Node.js flags of bin/plantstore's first line: `nodeArgs` for a test that measures the server as operators run it. */
export const BIN_NODE_FLAGS = readFileSync(BIN, 'utf8').split('\n', 1)[0]!.split(/\s+/).filter((word) => word.startsWith('--'));

/** The bounds of every wait on a process: a regression fails the test in seconds instead of hanging the run. */
const CLI_TIMEOUT_MS = 60_000;
const LISTEN_TIMEOUT_MS = 20_000;
/** Past the default SHUTDOWN_GRACE_MS (10 s) and its own bounds. */
const EXIT_TIMEOUT_MS = 20_000;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/plantstore` with these arguments and environment additions, and `nodeArgs` for Node.js itself. */
export async function runCli(args: readonly string[], env: Record<string, string> = {}, nodeArgs: readonly string[] = []): Promise<CliResult> {
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  // Decoded as a stream: a character whose bytes arrive in two chunks is not broken in two.
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await within(`plantstore ${args.join(' ')} exits`, once(child, 'close'), CLI_TIMEOUT_MS)) as [number | null];
  return { code, stdout, stderr };
}

/**
 * `plantstore ARGS` in this process, with these environment additions: for a test's setup and its
 * reads of the store, where a child process would prove nothing more and cost a third of a second.
 */
export function runInProcess(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  // node-postgres reads PGUSER and its kin from process.env itself: only a child process can be handed them.
  if (Object.keys(env).some((name) => name.startsWith('PG'))) return runCli(args, env);
  return runMain(args, { ...process.env, ...env } as Record<string, string>);
}

/** `plantstore token create --name NAME [args]`, in this process: asserts it succeeds and resolves the token. */
export async function createToken(env: Record<string, string>, name: string, args: readonly string[] = []): Promise<string> {
  const created = await runInProcess(['token', 'create', '--name', name, ...args], env);
  assert.equal(created.code, 0, created.stderr);
  return created.stdout.trim();
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Every log line the server wrote so far, parsed. */
  logs: Record<string, unknown>[];
  /** What the server wrote on stderr so far: the line that names its store, once it listens. */
  readonly stderr: string;
  /** Sends a signal and resolves the exit code once all the server wrote is read (and in `logs`). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `bin/plantstore serve` on a free port and waits until it listens;
 * killed after the test. `nodeArgs` go to Node.js itself (`--expose-gc`, ...).
 */
export function startServer(t: TestContext, env: Record<string, string>, args: readonly string[] = [], nodeArgs: readonly string[] = []): Promise<ServerProcess> {
  return startPlantstore(t, env, ['serve', '--port', '0', ...args], nodeArgs, (entry) => /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(entry['msg']))?.[1]);
}

/** Starts `bin/plantstore deliver` with its health and metrics port on a free one, and waits until it delivers; killed after the test. */
export function startDeliverer(t: TestContext, env: Record<string, string>, args: readonly string[] = []): Promise<ServerProcess> {
  return startPlantstore(t, env, ['deliver', '--port', '0', ...args], [], (entry) => (entry['msg'] === 'plantstore delivering webhooks' ? String(entry['url']) : undefined));
}

/** `bin/plantstore ARGS`, until a log line gives `urlOf` its address. */
async function startPlantstore(
  t: TestContext,
  env: Record<string, string>,
  args: readonly string[],
  nodeArgs: readonly string[],
  urlOf: (entry: Record<string, unknown>) => string | undefined,
): Promise<ServerProcess> {
  // In a process group of its own, so that the deliverer it starts goes with it after the test, whatever its state.
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // 'close' comes after 'exit' and after stdout is read to its end: every log line is in by then.
  const closed = once(child, 'close');
  t.after(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The whole group has exited.
    }
  });
  const logs: Record<string, unknown>[] = [];
  const listening = new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      logs.push(entry);
      const url = urlOf(entry);
      if (url !== undefined) resolve(url);
    });
    child.once('exit', (code, signal) => reject(new Error(`plantstore ${args[0]} exited with ${code ?? signal} before it started: ${stderr}`)));
  });
  const url = await within(`plantstore ${args[0]} starts`, listening, LISTEN_TIMEOUT_MS);
  return {
    url,
    child,
    logs,
    get stderr() {
      return stderr;
    },
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      const [code] = (await within(`plantstore ${args[0]} exits after ${signal}`, closed, EXIT_TIMEOUT_MS)) as [number | null];
      return code;
    },
  };
}

/** POST /plants over a real connection. */
export async function postPlant(url: string, token: string, body: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, body: await response.text() };
}
