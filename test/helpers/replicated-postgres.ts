import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { freePort } from './fleet.js';
import {
  closeClient,
  PG_BIN,
  pollUntil,
  postgresServerMissing,
  postgresTempDir,
  queryOnce,
  readPostmasterPid,
  removeLeftoverSharedMemory,
  runAsPostgres,
  serverGone,
  serverProcesses,
  signalServer,
} from './postgres-servers.js';
import { requireOrSkip } from './require-or-skip.js';

/**
 * A primary and a standby of its own, started from PostgreSQL's programs on
 * this machine (initdb, pg_basebackup -R, pg_ctl), for the tests that kill,
 * freeze and promote PostgreSQL. Replication is synchronous: a commit the
 * primary acknowledges is flushed to the standby's disk.
 *
 * Measured here (2 cores, other work running): the pair is up in 2.8-3.7 s
 * (initdb ~0.7 s, CREATE DATABASE ~0.3 s, base backup ~0.6 s, the two starts
 * and the wait for `sync_state = 'sync'` the rest); `promote()` of the
 * standby of a killed primary takes 0.12-0.15 s.
 */

export type NodeRole = 'primary' | 'standby';

export interface PostgresNode {
  /** What the node was started as; a promoted standby keeps its name. */
  readonly name: NodeRole;
  readonly port: number;
  readonly dataDir: string;
  /** The postmaster's pid, from postmaster.pid once the node was up. */
  readonly pid: number;
  /** postgres://postgres@127.0.0.1:PORT/DATABASE (`database` defaults to the pair's). */
  url(database?: string): string;
  /**
   * SIGKILL and SIGSTOP reach the postmaster and every process it started
   * (backends, WAL sender or receiver, checkpointer...) at once, as a crashed
   * or frozen machine would; SIGCONT thaws them all; other signals go to the
   * postmaster (SIGTERM, SIGINT, SIGQUIT: its smart, fast and immediate
   * shutdowns). `{ postmasterOnly: true }` signals the postmaster alone.
   */
  kill(signal: NodeJS.Signals, options?: { postmasterOnly?: boolean }): void;
  /** Whether the postmaster still runs. */
  running(): boolean;
  /** `pg_ctl promote`, then waits until `pg_is_in_recovery()` is false. */
  promote(timeoutMs?: number): Promise<void>;
  /** One query on a connection of its own, bounded by `timeoutMs` (connect and query each). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[], timeoutMs?: number): Promise<R[]>;
  /** A connected client, closed (or its socket dropped) after the test. */
  connect(config?: pg.ClientConfig): Promise<pg.Client>;
}

export interface ReplicatedPair {
  /** postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/plants?target_session_attrs=read-write */
  readonly url: string;
  readonly database: string;
  readonly primary: PostgresNode;
  readonly standby: PostgresNode;
  /** The single-host URL of the node on `port`, or of `node`. */
  urlFor(node: PostgresNode | number, database?: string): string;
}

export interface ReplicatedPairOptions {
  /** The database created on the primary before the base backup; `plants` by default. */
  database?: string;
  /** postgresql.conf lines for both nodes, after the harness's own (so they win). */
  settings?: Record<string, string | number>;
  /** The bound on the whole start; 60 s by default. */
  startTimeoutMs?: number;
}

/** The standby's application_name, which the primary's synchronous_standby_names names. */
const STANDBY_NAME = 'standby';

/**
 * Starts the pair on two free loopback ports and resolves once the primary
 * shows the standby in pg_stat_replication with sync_state 'sync'. Both are
 * killed and their folder removed after the test, whatever state the test
 * left them in. Resolves undefined, after skipping the test with one line,
 * when PostgreSQL's server programs are not installed (under CI=true or
 * PLANTSTORE_TEST_POSTGRES=require that fails the test instead).
 */
export async function startReplicatedPair(t: TestContext, options: ReplicatedPairOptions = {}): Promise<ReplicatedPair | undefined> {
  const missing = postgresServerMissing();
  if (!requireOrSkip(t, missing ?? '', missing === undefined)) return undefined;
  const database = options.database ?? 'plants';
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const root = postgresTempDir('plantstore-pg-');
  const clients = new Set<pg.Client>();
  const dirs = { primary: join(root, 'primary'), standby: join(root, 'standby') };
  t.after(async () => {
    await Promise.all([...clients].map((client) => closeClient(client)));
    await Promise.all(Object.values(dirs).map((dir) => stopServer(dir)));
    rmSync(root, { recursive: true, force: true });
  });

  const waitSeconds = String(Math.ceil(timeoutMs / 1000));
  const ports = { primary: await freePort(), standby: await freePort() };
  await runAsPostgres(join(PG_BIN, 'initdb'), ['-D', dirs.primary, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'], {
    timeoutMs,
  });
  appendSettings(dirs.primary, {
    listen_addresses: '127.0.0.1',
    port: ports.primary,
    unix_socket_directories: root,
    cluster_name: 'primary',
    wal_level: 'replica',
    max_wal_senders: 4,
    max_replication_slots: 4,
    hot_standby: 'on',
    wal_keep_size: '64MB',
    fsync: 'on',
    synchronous_commit: 'on',
    shared_buffers: '16MB',
    max_connections: 40,
    // Shared memory in the data dir rather than /dev/shm: a killed server leaves nothing behind outside its folder.
    dynamic_shared_memory_type: 'mmap',
    // A standby retries its primary every 5 s by default, and a promotion waits out that pause.
    wal_retrieve_retry_interval: '100ms',
    ...options.settings,
  });
  await pgCtl(['start', '-w', '-t', waitSeconds, '-D', dirs.primary, '-l', join(root, 'primary.log')], timeoutMs, root);
  const primaryUrl = nodeUrl(ports.primary, 'postgres');
  await queryOnce({ connectionString: primaryUrl }, `CREATE DATABASE ${pg.escapeIdentifier(database)}`);

  // -R writes standby.signal and primary_conninfo (with this application_name); -C -S a slot, so that the
  // primary keeps the WAL the standby has yet to receive. --no-sync: a process crash loses no page cache.
  await runAsPostgres(
    join(PG_BIN, 'pg_basebackup'),
    [
      '-D',
      dirs.standby,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '-C',
      '-S',
      STANDBY_NAME,
      '--no-sync',
      '-d',
      `host=127.0.0.1 port=${ports.primary} user=postgres application_name=${STANDBY_NAME}`,
    ],
    { timeoutMs },
  );
  appendSettings(dirs.standby, { port: ports.standby, cluster_name: STANDBY_NAME });
  await pgCtl(['start', '-w', '-t', waitSeconds, '-D', dirs.standby, '-l', join(root, 'standby.log')], timeoutMs, root);
  // Only now, and only on the primary: before a standby is there, and on a promoted standby that has none of
  // its own, naming one would make every commit wait forever.
  appendSettings(dirs.primary, { synchronous_standby_names: STANDBY_NAME });
  await pgCtl(['reload', '-D', dirs.primary], timeoutMs, root);
  await pollUntil(
    `the primary shows the standby as synchronous`,
    async () => {
      const rows = await queryOnce<{ sync_state: string }>(
        { connectionString: primaryUrl },
        'SELECT sync_state FROM pg_stat_replication WHERE application_name = $1',
        [STANDBY_NAME],
      );
      return rows[0]?.sync_state === 'sync' ? true : undefined;
    },
    timeoutMs,
    50,
  );

  const node = (name: NodeRole): PostgresNode => {
    const dataDir = dirs[name];
    const port = ports[name];
    const pid = readPostmasterPid(dataDir)?.pid;
    if (pid === undefined) throw new Error(`${name}: no postmaster.pid after start`);
    const self: PostgresNode = {
      name,
      port,
      dataDir,
      pid,
      url: (db = database) => nodeUrl(port, db),
      kill: (signal, killOptions = {}) => signalServer(dataDir, pid, signal, killOptions),
      running: () => serverProcesses(dataDir).includes(pid),
      promote: async (promoteTimeoutMs = 30_000) => {
        await pgCtl(['promote', '-w', '-t', String(Math.ceil(promoteTimeoutMs / 1000)), '-D', dataDir], promoteTimeoutMs, root);
        await pollUntil(
          `${name} is out of recovery`,
          async () => ((await self.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r'))[0]?.r === false ? true : undefined),
          promoteTimeoutMs,
          50,
        );
      },
      query: (sql, params = [], queryTimeoutMs = 5_000) => queryOnce({ connectionString: self.url() }, sql, params, queryTimeoutMs),
      connect: async (config = {}) => {
        const client = new pg.Client({ connectionString: self.url(), connectionTimeoutMillis: 5_000, ...config });
        client.on('error', () => undefined);
        clients.add(client);
        await client.connect();
        return client;
      },
    };
    return self;
  };
  const primary = node('primary');
  const standby = node('standby');
  return {
    url: `postgres://postgres@127.0.0.1:${ports.primary},127.0.0.1:${ports.standby}/${encodeURIComponent(database)}?target_session_attrs=read-write`,
    database,
    primary,
    standby,
    urlFor: (target, db = database) => nodeUrl(typeof target === 'number' ? target : target.port, db),
  };
}

function nodeUrl(port: number, database: string): string {
  return `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/** Appends settings to the data dir's postgresql.conf; a later line wins over an earlier one. */
function appendSettings(dataDir: string, settings: Record<string, string | number>): void {
  const lines = Object.entries(settings).map(([name, value]) => `${name} = ${typeof value === 'number' ? value : `'${value.replaceAll("'", "''")}'`}`);
  appendFileSync(join(dataDir, 'postgresql.conf'), `\n# The failover test harness\n${lines.join('\n')}\n`);
}

async function pgCtl(args: readonly string[], timeoutMs: number, root: string): Promise<void> {
  try {
    await runAsPostgres(join(PG_BIN, 'pg_ctl'), args, { timeoutMs: timeoutMs + 5_000 });
  } catch (error) {
    const log = args.includes('-l') ? args[args.indexOf('-l') + 1] : undefined;
    const logged = log === undefined ? '' : safeRead(log);
    throw new Error(`${(error as Error).message}${logged === '' ? '' : `\n${logged}`} (folder ${root})`);
  }
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Stops the server of `dataDir` whatever its state: thawed (SIGCONT), then
 * `pg_ctl stop -m immediate`, then SIGKILL to its process group if it still
 * runs; a killed server's leftover shared memory segment is removed.
 */
async function stopServer(dataDir: string): Promise<void> {
  const left = readPostmasterPid(dataDir);
  if (left === undefined) return;
  signalServer(dataDir, left.pid, 'SIGCONT');
  if (serverProcesses(dataDir).includes(left.pid)) {
    try {
      await runAsPostgres(join(PG_BIN, 'pg_ctl'), ['stop', '-m', 'immediate', '-w', '-t', '10', '-D', dataDir], { timeoutMs: 15_000 });
    } catch {
      // Killed below.
    }
  }
  // Backends can outlive a postmaster that was killed alone, for a moment.
  if (serverProcesses(dataDir).length > 0) {
    signalServer(dataDir, left.pid, 'SIGKILL');
    await serverGone(dataDir, 5_000);
  }
  removeLeftoverSharedMemory(dataDir);
}
