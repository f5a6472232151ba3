import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/**
 * Running PostgreSQL's own programs on this machine for the failover tests:
 * as the postgres user (PostgreSQL refuses root), in folders under the temp
 * dir, each server in a process group of its own so that a test can kill,
 * freeze and thaw all of its processes at once.
 */

/** Where initdb, pg_ctl, pg_basebackup and postgres are; PLANTSTORE_TEST_PG_BIN names another folder. */
export const PG_BIN = process.env['PLANTSTORE_TEST_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';
const RUNUSER = '/usr/sbin/runuser';
const AS_ROOT = process.getuid?.() === 0;

/** Why PostgreSQL servers cannot be started here, or undefined. */
export function postgresServerMissing(): string | undefined {
  const missing = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'].filter((name) => !isExecutable(join(PG_BIN, name)));
  if (missing.length > 0) {
    return `PostgreSQL's server programs (${missing.join(', ')}) are not in ${PG_BIN} (Debian package postgresql-15, or set PLANTSTORE_TEST_PG_BIN)`;
  }
  if (AS_ROOT && !isExecutable(RUNUSER)) return `running as root without ${RUNUSER} to start PostgreSQL as the postgres user`;
  if (AS_ROOT && !readFileSync('/etc/passwd', 'utf8').split('\n').some((line) => line.startsWith('postgres:'))) {
    return 'running as root without a postgres user to start PostgreSQL as';
  }
  return undefined;
}

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The environment of the programs: a plain PATH (root's own may name folders
 * postgres cannot read, which pg_autoctl then logs errors about), the locale,
 * and `extra`; none of the caller's PG* variables.
 */
function programEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', TZ: 'UTC', ...extra };
}

/**
 * The command line that runs `program` as the postgres user (as is when not
 * root), with `env` set through env(1): runuser resets HOME.
 */
function asPostgres(program: string, args: readonly string[], env: Record<string, string>): [string, string[]] {
  const assignments = Object.entries(env).map(([name, value]) => `${name}=${value}`);
  return AS_ROOT ? [RUNUSER, ['-u', 'postgres', '--', '/usr/bin/env', ...assignments, program, ...args]] : [program, [...args]];
}

export interface ProgramOutput {
  stdout: string;
  stderr: string;
}

/**
 * Runs `program` as postgres to its end: resolves its output, or rejects with
 * it when it exits other than 0 or has not ended after `timeoutMs` (it is
 * killed then).
 */
export function runAsPostgres(
  program: string,
  args: readonly string[],
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ProgramOutput> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const [command, commandArgs] = asPostgres(program, args, options.env ?? {});
  const child = spawn(command, commandArgs, { env: programEnv(options.env ?? {}), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const line = [program, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signalGroup(child.pid!, 'SIGKILL');
      reject(new Error(`${line} did not end within ${timeoutMs} ms\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`${line} exited with ${code ?? signal}\n${stdout}${stderr}`));
    });
  });
}

/**
 * Starts a long-running `program` as postgres in a process group of its own
 * (its pid is the group's id), its output appended to `log`.
 */
export function spawnAsPostgres(program: string, args: readonly string[], options: { env?: Record<string, string>; log: string }): ChildProcess {
  const [command, commandArgs] = asPostgres(program, args, options.env ?? {});
  const fd = openSync(options.log, 'a');
  try {
    const child = spawn(command, commandArgs, { env: programEnv(options.env ?? {}), stdio: ['ignore', fd, fd], detached: true });
    child.on('error', () => undefined);
    return child;
  } finally {
    closeSync(fd);
  }
}

/** A new folder under the temp dir, owned by postgres; the caller removes it. */
export function postgresTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chownToPostgres(dir);
  return dir;
}

/** Hands `path` (and what is in it) to the postgres user; nothing to do when not root. */
export function chownToPostgres(path: string): void {
  if (AS_ROOT) execFileSync('chown', ['-R', 'postgres:postgres', path]);
}

/** Sends `signal` to every process of the group `pgid`; a group that is gone is no error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  // 0 or -1 would signal the caller's own group, or every process it may.
  if (!Number.isInteger(pgid) || pgid <= 1) throw new Error(`not a process group to signal: ${pgid}`);
  try {
    process.kill(-pgid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Sends `signal` to one process; one that is gone is no error. */
export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  if (!Number.isInteger(pid) || pid <= 1) throw new Error(`not a process to signal: ${pid}`);
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** State and process group of a process from /proc, or undefined when it is gone. */
function processStat(pid: number): { state: string; pgid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', pgid: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

/** Whether the process runs (a zombie does not). */
export function processAlive(pid: number): boolean {
  const stat = processStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

/** The pids of the processes of group `pgid` that still run. */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(Number(entry));
    if (stat?.pgid === pgid && stat.state !== 'Z' && stat.state !== 'X') members.push(Number(entry));
  }
  return members;
}

/** Resolves once no process of group `pgid` runs; rejects after `timeoutMs`. */
export async function groupGone(pgid: number, timeoutMs: number): Promise<void> {
  await pollUntil(`the processes of group ${pgid} are gone`, async () => (groupMembers(pgid).length === 0 ? true : undefined), timeoutMs, 20);
}

/**
 * Ends every process of group `pgid` for good: SIGCONT first (a frozen
 * process would not act on anything else), then `signal`, then SIGKILL for
 * whatever still runs after `graceMs`.
 */
export async function endGroup(pgid: number, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  signalGroup(pgid, 'SIGCONT');
  signalGroup(pgid, signal);
  try {
    await groupGone(pgid, graceMs);
  } catch {
    signalGroup(pgid, 'SIGKILL');
    await groupGone(pgid, 5_000);
  }
}

/**
 * The running processes of the server of `dataDir`: the postmaster and every
 * process it started, found by their working directory (the data dir) and
 * program. The postmaster puts each child in a process group of its own, so
 * no one process group holds them all; orphans of a killed postmaster are
 * found too.
 */
export function serverProcesses(dataDir: string): number[] {
  let dir: string;
  try {
    dir = realpathSync(dataDir);
  } catch {
    return [];
  }
  const postgres = join(PG_BIN, 'postgres');
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) !== dir || !readlinkSync(`/proc/${entry}/exe`).startsWith(postgres)) continue;
    } catch {
      continue; // Gone, or not ours to look at.
    }
    if (processAlive(Number(entry))) found.push(Number(entry));
  }
  return found;
}

/**
 * Signals the server of `dataDir` the way a machine would: SIGKILL and
 * SIGSTOP reach the postmaster and every process it started at once (the
 * postmaster is stopped first, so that it starts no new one meanwhile),
 * SIGCONT all of them; any other signal, or any with `postmasterOnly`, goes
 * to the postmaster alone (SIGTERM, SIGINT and SIGQUIT are its three ways to
 * shut down). `postmasterPid` (from postmaster.pid, which a killed server
 * leaves behind) counts only while it is one of the server's processes: a
 * pid the system gave to another process since is left alone.
 */
export function signalServer(dataDir: string, postmasterPid: number | undefined, signal: NodeJS.Signals, options: { postmasterOnly?: boolean } = {}): void {
  const running = serverProcesses(dataDir);
  const postmaster = postmasterPid !== undefined && running.includes(postmasterPid) ? postmasterPid : undefined;
  if (options.postmasterOnly === true || (signal !== 'SIGKILL' && signal !== 'SIGSTOP' && signal !== 'SIGCONT')) {
    if (postmaster !== undefined) signalProcess(postmaster, signal);
    return;
  }
  if (postmaster !== undefined && signal !== 'SIGCONT') signalProcess(postmaster, 'SIGSTOP');
  // Once more: a child the postmaster started meanwhile is in the list now.
  for (const pid of postmaster === undefined ? running : serverProcesses(dataDir)) if (pid !== postmaster) signalProcess(pid, signal);
  if (postmaster !== undefined) signalProcess(postmaster, signal);
}

/** Resolves once no process of the server of `dataDir` runs; rejects after `timeoutMs`. */
export async function serverGone(dataDir: string, timeoutMs: number): Promise<void> {
  await pollUntil(`the processes of the server in ${dataDir} are gone`, async () => (serverProcesses(dataDir).length === 0 ? true : undefined), timeoutMs, 20);
}

export interface PostmasterPid {
  pid: number;
  port: number;
  /** The System V segment that PostgreSQL keeps as an interlock: key and id. */
  shmKey: number;
  shmId: number;
}

/** What postmaster.pid in `dataDir` says, or undefined when there is none (the server is stopped cleanly). */
export function readPostmasterPid(dataDir: string): PostmasterPid | undefined {
  const file = join(dataDir, 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').split('\n');
  const [shmKey, shmId] = (lines[6] ?? '').trim().split(/\s+/).map(Number);
  return { pid: Number(lines[0]), port: Number(lines[3]), shmKey: shmKey ?? NaN, shmId: shmId ?? NaN };
}

/**
 * After a server was killed (postmaster.pid is left behind), removes the
 * small System V segment it kept, when that very segment (same key and id)
 * is still there and nothing is attached to it. A clean stop removes it itself.
 * The servers are set to keep their other shared memory in the data dir
 * (dynamic_shared_memory_type = mmap), which goes with the temp dir.
 */
export function removeLeftoverSharedMemory(dataDir: string): void {
  const left = readPostmasterPid(dataDir);
  if (left === undefined || !Number.isFinite(left.shmId) || processAlive(left.pid)) return;
  let segments: string;
  try {
    segments = readFileSync('/proc/sysvipc/shm', 'utf8');
  } catch {
    return;
  }
  for (const row of segments.split('\n').slice(1)) {
    const [key, id, , , , , nattch] = row.trim().split(/\s+/).map(Number);
    if (key === left.shmKey && id === left.shmId && nattch === 0) {
      try {
        execFileSync('ipcrm', ['-m', String(id)], { stdio: 'ignore' });
      } catch {
        // Already gone.
      }
    }
  }
}

/**
 * Resolves the first value other than undefined that `probe` resolves,
 * asking every `intervalMs`; a probe that throws counts as not yet. Rejects
 * after `timeoutMs`, naming `what` and the last error.
 */
export async function pollUntil<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const last = lastError === undefined ? '' : `; last error: ${(lastError as Error).message}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}${last}`);
    }
    await sleep(intervalMs);
  }
}

/** Ends a client, and drops its socket if the server does not answer within `timeoutMs` (a frozen one never does). */
export async function closeClient(client: pg.Client, timeoutMs = 1_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([
    client.end().then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (!ended) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** One query on a connection of its own, every step bounded by `timeoutMs`. */
export async function queryOnce<R extends pg.QueryResultRow = pg.QueryResultRow>(
  config: pg.ClientConfig,
  sql: string,
  params: unknown[] = [],
  timeoutMs = 5_000,
): Promise<R[]> {
  const client = new pg.Client({ connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, ...config });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await closeClient(client);
  }
}
