import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A server under load: where it listens, and how to read its peak memory and stop it. */
export interface RunningServer {
  url: string;
  pid: number;
  /** Peak resident memory since the process started (VmHWM), in MiB. */
  peakRssMiB(): number;
  /**
   * CPU time used so far (user + system) by the server's processes and all their threads, in
   * seconds, from /proc: the process's own and that of its live child processes (workers).
   */
  cpuSeconds(): number;
  stop(): Promise<void>;
  /** Kills it with SIGKILL, as a crash would, and resolves once it has exited. */
  kill(): Promise<void>;
}

/**
 * `cpu`: the core to pin the server to with taskset, when the caller found taskset and two cores. The deliverer it
 * starts is left to the operating system, as on an operator's machine (see unpinChildren).
 */
export async function startService(env: Record<string, string>, cpu: number | undefined): Promise<RunningServer> {
  // Run as an operator runs it, so that the Node.js flags of its first line apply.
  const server = await start((port) => [`${ROOT}/bin/plantstore`, 'serve', '--port', String(port)], env, cpu);
  if (cpu !== undefined) unpinChildren(server.pid);
  return server;
}

/**
 * Lets the child processes of `pid` (a server's deliverer, which inherited its pinning) run on any core: the server is
 * pinned to keep it apart from the load generator, not to hold its deliverer on its core. A deliverer started later by
 * the server (after one died) keeps the pinning.
 */
export function unpinChildren(pid: number): void {
  const cores = `0-${availableParallelism() - 1}`;
  for (const child of childPids(pid)) spawnSync('taskset', ['-a', '-p', '-c', cores, String(child)], { stdio: 'ignore' });
}

/** `bin/plantstore deliver`, with its health and metrics port, so that the benchmark knows when it has started. */
export async function startDeliverer(env: Record<string, string>, cpu: number | undefined): Promise<RunningServer> {
  return start((port) => [`${ROOT}/bin/plantstore`, 'deliver', '--port', String(port)], env, cpu);
}

/**
 * Another build of the service (`bin`, a copy's bin/plantstore), started as an operator's
 * `bin/plantstore serve` would be: with the Node.js flags and environment of its first line.
 */
export async function startBuild(bin: string, env: Record<string, string>, cpu: number | undefined): Promise<RunningServer> {
  const launch = binLaunch(bin);
  return start((port) => [process.execPath, ...launch.flags, bin, 'serve', '--port', String(port)], { ...launch.env, ...env }, cpu);
}

/**
 * What the first line of a build's bin/plantstore (`#!/usr/bin/env -S [NAME=VALUE]... node FLAGS`)
 * sets: the environment and the Node.js flags that a tool starting it as `node [flags] BIN` must
 * pass to run it as an operator does.
 */
export function binLaunch(bin: string): { env: Record<string, string>; flags: string[] } {
  const words = readFileSync(bin, 'utf8').split('\n', 1)[0]!.split(/\s+/);
  const assignments = words.filter((word) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)).map((word) => word.split(/=(.*)/s).slice(0, 2));
  return { env: Object.fromEntries(assignments), flags: words.filter((word) => word.startsWith('--')) };
}

/** The bare baseline; with `databaseUrl` (sqlite: or postgres:), the durable floor, which stores every plant there. */
export async function startBaseline(token: string, cpu: number | undefined, databaseUrl?: string): Promise<RunningServer> {
  const database = databaseUrl === undefined ? [] : [databaseUrl];
  return start((port) => [process.execPath, `${ROOT}/bench/baseline-server.mjs`, String(port), ...database], { BASELINE_TOKEN: token }, cpu);
}

async function start(commandFor: (port: number) => string[], env: Record<string, string>, cpu: number | undefined): Promise<RunningServer> {
  const port = await freePort();
  const command = commandFor(port);
  const pinned = cpu !== undefined ? ['taskset', '-c', String(cpu), ...command] : command;
  // Logs go nowhere, but are still written: the service is measured as it runs in production.
  const child = spawn(pinned[0]!, pinned.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  await waitUntilServing(url, child);
  return {
    url,
    pid: child.pid!,
    peakRssMiB: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)![1]) / 1024;
    },
    cpuSeconds: () => treeCpuSeconds(child.pid!),
    stop: () => ended(child, 'SIGTERM'),
    kill: () => ended(child, 'SIGKILL'),
  };
}

async function ended(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

async function waitUntilServing(url: string, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    try {
      await fetch(`${url}/healthz`);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`nothing answered at ${url}`);
}

/**
 * A port nothing listens on now, below Linux's ephemeral range (32768 to
 * 60999), where the load's and the database's connections take their local
 * ports: one of those can take a port between this check and the server's
 * listen. A random port from 20000 to 40000 once failed a compare-builds.ts
 * run with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** Clock ticks a second of /proc's times (USER_HZ): 100 on every Linux that Node.js runs on. */
const TICKS_PER_SECOND = 100;

/**
 * utime + stime of a process (its line in /proc/PID/stat already adds up all its threads), plus
 * cutime + cstime (children that exited and were waited for), plus the same for each live child.
 */
export function treeCpuSeconds(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0; // gone since it was listed
  }
  // The command name, in parentheses, may hold spaces: the fields are counted after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 to 17 of proc(5) (utime, stime, cutime, cstime) are 11 to 14 here, from field 3 on.
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return ticks / TICKS_PER_SECOND + childPids(pid).reduce((sum, child) => sum + treeCpuSeconds(child), 0);
}

function childPids(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}
