import { type ChildProcess, execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort } from './fleet.js';
import {
  chownToPostgres,
  endGroup,
  groupGone,
  groupMembers,
  isExecutable,
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
  signalGroup,
  signalServer,
  spawnAsPostgres,
} from './postgres-servers.js';
import { requireOrSkip } from './require-or-skip.js';
import { within } from './until.js';

/**
 * A pg_auto_failover formation on this machine: a monitor and two or three
 * data nodes (`node1`, `node2`, `node3`) on loopback ports, each `pg_autoctl run` a process group
 * of its own, run as postgres, with trust authentication and self-signed TLS.
 * The monitor decides failovers; the tests kill nodes and watch it do so.
 *
 * Measured here (2 cores, other work running, pg_auto_failover 2.0 on
 * PostgreSQL 15), with the health-check values below, over eight runs:
 * - the formation is up (node1 primary, node2 secondary) in 9-12 s: the
 *   monitor 1.7-3 s, node1 1.7-3 s, node2 (base backup, then catching up
 *   until the monitor calls it secondary) 4-6 s;
 * - after killNode() of the primary, the monitor names the other node
 *   primary in 5.2-6.4 s: it sees the kill in about 2 s, then waits out
 *   primary_demote_timeout (3 s). With only the health checks shortened and
 *   primary_demote_timeout at its default, the same took 32 s;
 * - a killed node that startNode() runs again is back as a secondary (and
 *   the other primary again) in 1.2-3.4 s;
 * - switchover() takes 2-4.6 s.
 */

/** How many times a switchover the monitor rolled back on its own deadlock is asked for. */
const MONITOR_DEADLOCK_ATTEMPTS = 3;

/** The monitor's health checks, shortened so that a failover comes in seconds. */
export const FAST_HEALTH_CHECKS = {
  // Defaults: 5000 ms between checks, 5000 ms to connect, 2 retries 2000 ms apart.
  'pgautofailover.health_check_period': 1000,
  'pgautofailover.health_check_timeout': 1000,
  'pgautofailover.health_check_max_retries': 1,
  'pgautofailover.health_check_retry_delay': 500,
  // Default 20000: how long a node that fails its checks must also have been silent (its keeper reports every second).
  'pgautofailover.node_considered_unhealthy_timeout': 2000,
  // Default 10000: no failover decision this soon after the monitor starts.
  'pgautofailover.startup_grace_period': 2000,
  // Default 30000: how long the monitor waits for a lost primary to acknowledge its demotion before promoting the
  // standby. It must outlast the keepers' network_partition_timeout (set to 2 s below; default 20 s), after which a
  // primary cut off from both the monitor and its standby demotes itself.
  'pgautofailover.primary_demote_timeout': 3000,
} as const;

/** The keepers' side of the same bargain: seconds before a primary cut off from the monitor and its standby demotes itself. */
const NETWORK_PARTITION_TIMEOUT_S = 2;

const PG_AUTOCTL = process.env['PLANTSTORE_TEST_PG_AUTOCTL'] ?? '/usr/bin/pg_autoctl';
export const PG_AUTOCTL_MISSING = `pg_autoctl is not installed at ${PG_AUTOCTL} (Debian packages postgresql-15-auto-failover, pg-auto-failover-cli)`;
const DATABASE = 'plants';
/** States in which a node is the primary and takes writes, once it reports the state it was assigned. */
const PRIMARY_STATES = new Set(['single', 'wait_primary', 'primary', 'join_primary', 'apply_settings']);

export interface NodeState {
  name: string;
  port: number;
  reportedState: string;
  goalState: string;
  /** The monitor's health check: 1 good, 0 bad, -1 unknown. */
  health: number;
}

export interface FormationNode {
  readonly name: string;
  readonly port: number;
  readonly pgdata: string;
  /** postgres://postgres@127.0.0.1:PORT/DATABASE, without TLS (`database` defaults to plants). */
  url(database?: string): string;
  /** Whether its `pg_autoctl run` runs (it is not after killNode). */
  running(): boolean;
}

export interface AutoFailoverFormation {
  /**
   * The formation's URL as `pg_autoctl show uri --formation default` prints
   * it: postgres://127.0.0.1:P1,127.0.0.1:P2/plants?target_session_attrs=read-write&sslmode=require.
   * It names no user: libpq takes PGUSER, or the name of the OS user.
   */
  readonly url: string;
  /** postgres://autoctl_node@127.0.0.1:PORT/pg_auto_failover?sslmode=require */
  readonly monitorUrl: string;
  readonly nodes: readonly FormationNode[];
  /** How long each step of the start took, in ms: monitor, node1 (to single), the standbys (to secondary). */
  readonly startup: { monitor: number; node1: number; standbys: number };
  node(name: string): FormationNode;
  /** The monitor's view of the nodes, in node id order. */
  states(): Promise<NodeState[]>;
  /** The node the monitor holds as the primary (reported state = assigned state, a primary one), or undefined. */
  currentPrimary(): Promise<string | undefined>;
  /** Resolves the primary's name once `predicate` holds for it; rejects after `timeoutMs`. */
  waitForPrimary(predicate: (name: string) => boolean, timeoutMs: number): Promise<string>;
  /** Resolves once one node is primary and the others secondary, both as reported and assigned. */
  waitUntilSettled(timeoutMs: number): Promise<void>;
  /** SIGKILL to the node's pg_autoctl (which would otherwise restart Postgres) and to every process of its Postgres at once. */
  killNode(name: string): Promise<void>;
  /** Runs a node's `pg_autoctl run` again (after killNode): it rejoins as a standby. */
  startNode(name: string): Promise<void>;
  /** `pg_autoctl perform switchover`; resolves the new primary's name. */
  switchover(timeoutMs?: number): Promise<string>;
  /** The monitor's event log, oldest first, one line an event: what a failing test prints to show what the formation did. */
  events(): Promise<string[]>;
}

/** Resolves once `child` has exited (at once if it has). */
function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Why pg_auto_failover cannot run here, or undefined: pg_autoctl, and the monitor's extension in this PostgreSQL. */
function autoFailoverMissing(): string | undefined {
  if (!isExecutable(PG_AUTOCTL)) return PG_AUTOCTL_MISSING;
  let sharedir = '';
  try {
    sharedir = execFileSync(join(PG_BIN, 'pg_config'), ['--sharedir'], { encoding: 'utf8' }).trim();
  } catch {
    // No pg_config: the start would say what is missing.
    return undefined;
  }
  return existsSync(join(sharedir, 'extension', 'pgautofailover.control'))
    ? undefined
    : `the pgautofailover extension is not installed in ${sharedir} (Debian package postgresql-15-auto-failover)`;
}

interface NodeDirs {
  home: string;
  pgdata: string;
  log: string;
  env: Record<string, string>;
}

/**
 * Starts the formation: monitor, then node1 (which becomes the primary),
 * then the standbys (base backups of node1); resolves once node1 is primary
 * and the standbys secondary.
 *
 * With one standby (the default), pg_auto_failover keeps writes available
 * over durable: while it holds the standby unhealthy, the primary commits
 * alone (`wait_primary`), and a switchover can then promote a standby that
 * lacks acknowledged commits. With two, the formation is set to
 * `number-sync-standbys 1`: every commit waits for a standby's flush (or
 * blocks), and a failover promotes the standby furthest ahead. The tests of
 * the 200 promise use two. Everything is killed and removed after the
 * test. Resolves undefined, after skipping the test with one line, when
 * pg_autoctl or PostgreSQL's programs are not installed (under CI=true or
 * PLANTSTORE_TEST_POSTGRES=require that fails the test instead).
 */
export async function startAutoFailoverFormation(
  t: TestContext,
  options: { startTimeoutMs?: number; standbys?: 1 | 2 } = {},
): Promise<AutoFailoverFormation | undefined> {
  const missing = postgresServerMissing() ?? autoFailoverMissing();
  if (!requireOrSkip(t, missing ?? '', missing === undefined)) return undefined;
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const root = postgresTempDir('plantstore-pgaf-');
  const sockets = join(root, 'sockets');
  mkdirSync(sockets);
  const dirs = (name: string): NodeDirs => {
    const home = join(root, name);
    // XDG_* and HOME: pg_autoctl keeps its configuration and state there, not in the postgres user's home.
    return {
      home,
      pgdata: join(home, 'pgdata'),
      log: join(root, `${name}.log`),
      env: { HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_DATA_HOME: join(home, 'data'), PGHOST: sockets },
    };
  };
  const monitor = dirs('monitor');
  const standbys = Array.from({ length: options.standbys ?? 1 }, (_, index) => `node${index + 2}`);
  const nodeDirs = new Map(['node1', ...standbys].map((name) => [name, dirs(name)]));
  for (const { home } of [monitor, ...nodeDirs.values()]) mkdirSync(home);
  chownToPostgres(root);
  const keepers = new Map<string, ChildProcess>();
  t.after(async () => {
    // Anything frozen thawed first; then an immediate shutdown: SIGQUIT to pg_autoctl and its Postgres alike.
    for (const { pgdata } of [monitor, ...nodeDirs.values()]) signalServer(pgdata, readPostmasterPid(pgdata)?.pid, 'SIGCONT');
    await Promise.all([...keepers.values()].map((keeper) => endGroup(keeper.pid!, 'SIGQUIT', 5_000).catch(() => undefined)));
    for (const { pgdata } of [monitor, ...nodeDirs.values()]) {
      if (serverProcesses(pgdata).length > 0) {
        signalServer(pgdata, readPostmasterPid(pgdata)?.pid, 'SIGKILL');
        await serverGone(pgdata, 5_000).catch(() => undefined);
      }
      removeLeftoverSharedMemory(pgdata);
    }
    rmSync(root, { recursive: true, force: true });
  });

  const autoctl = (node: NodeDirs, args: readonly string[], timeout = timeoutMs) => runAsPostgres(PG_AUTOCTL, args, { env: node.env, timeoutMs: timeout });
  const run = (name: string, node: NodeDirs) => {
    keepers.set(name, spawnAsPostgres(PG_AUTOCTL, ['run', '--pgdata', node.pgdata], { env: node.env, log: node.log }));
  };
  const withLog = async <T>(node: NodeDirs, step: Promise<T>): Promise<T> => {
    try {
      return await step;
    } catch (error) {
      let log = '';
      try {
        log = readFileSync(node.log, 'utf8').split('\n').slice(-40).join('\n');
      } catch {
        // No log yet.
      }
      throw new Error(`${(error as Error).message}${log === '' ? '' : `\n${node.log}:\n${log}`}`);
    }
  };

  // The data dirs of the monitor and node1 are made here rather than by pg_autoctl, to set beforehand what
  // must hold from the first start: Unix sockets in the temp dir (not /var/run/postgresql) and shared memory in
  // the data dir (not /dev/shm), so that a killed node leaves nothing outside the temp dir. A standby, a base
  // backup of node1, inherits its postgresql.conf. Lines after pg_autoctl's include win over it.
  const common = {
    unix_socket_directories: `'${sockets}'`,
    dynamic_shared_memory_type: 'mmap',
    // pg_autoctl's own tuning asks for a quarter of the machine; initdb's 128MB would win over it anyway.
    shared_buffers: "'32MB'",
    wal_retrieve_retry_interval: "'100ms'",
  };
  const initdb = async (node: NodeDirs, settings: Record<string, string | number>) => {
    await runAsPostgres(join(PG_BIN, 'initdb'), ['-D', node.pgdata, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'], {
      timeoutMs,
    });
    const lines = Object.entries(settings).map(([name, value]) => `${name} = ${value}`);
    appendFileSync(join(node.pgdata, 'postgresql.conf'), `\n# The failover test harness\n${lines.join('\n')}\n`);
  };
  const shared = ['--pgctl', join(PG_BIN, 'pg_ctl'), '--hostname', '127.0.0.1', '--listen', '127.0.0.1', '--auth', 'trust', '--ssl-self-signed'];

  let stepStarted = Date.now();
  const step = () => {
    const ms = Date.now() - stepStarted;
    stepStarted = Date.now();
    return ms;
  };
  const monitorPort = await freePort();
  await initdb(monitor, { ...common, ...FAST_HEALTH_CHECKS });
  // --listen is not in `create monitor --help`, but without it the monitor listens on every address.
  await withLog(monitor, autoctl(monitor, ['create', 'monitor', '--pgdata', monitor.pgdata, '--pgport', String(monitorPort), ...shared]));
  run('monitor', monitor);
  const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=require`;
  const monitorConnection = { host: '127.0.0.1', port: monitorPort, user: 'postgres', database: 'pg_auto_failover' };
  await withLog(
    monitor,
    pollUntil('the monitor answers', async () => (await queryOnce(monitorConnection, 'SELECT 1', [], 2_000)).length, timeoutMs),
  );
  const startup = { monitor: step(), node1: 0, standbys: 0 };

  const states = async (): Promise<NodeState[]> =>
    queryOnce<NodeState>(
      monitorConnection,
      `SELECT nodename AS name, nodeport AS port, reportedstate::text AS "reportedState", goalstate::text AS "goalState", health
         FROM pgautofailover.node WHERE formationid = 'default' ORDER BY nodeid`,
      [],
      5_000,
    );
  const waitForStates = (what: string, expected: Record<string, string>, timeout: number) =>
    pollUntil(
      what,
      async () => {
        const now = await states();
        return Object.entries(expected).every(([name, state]) => now.some((n) => n.name === name && n.reportedState === state && n.goalState === state))
          ? true
          : undefined;
      },
      timeout,
    );

  const ports = new Map<string, number>();
  const createNode = async (name: string) => {
    const node = nodeDirs.get(name)!;
    ports.set(name, await freePort());
    await withLog(
      node,
      autoctl(node, [
        'create',
        'postgres',
        '--pgdata',
        node.pgdata,
        '--pgport',
        String(ports.get(name)),
        '--name',
        name,
        '--dbname',
        DATABASE,
        '--monitor',
        monitorUrl,
        ...shared,
      ]),
    );
    await autoctl(node, ['config', 'set', '--pgdata', node.pgdata, 'timeout.network_partition_timeout', String(NETWORK_PARTITION_TIMEOUT_S)]);
    run(name, node);
  };
  await initdb(nodeDirs.get('node1')!, common);
  await createNode('node1');
  await withLog(nodeDirs.get('node1')!, waitForStates('node1 is single', { node1: 'single' }, timeoutMs));
  startup.node1 = step();
  const settledAs = { node1: 'primary', ...Object.fromEntries(standbys.map((name) => [name, 'secondary'])) };
  for (const name of standbys) {
    await createNode(name);
    const expected = Object.fromEntries(Object.entries(settledAs).filter(([node]) => node <= name));
    await withLog(nodeDirs.get(name)!, waitForStates(`${name} is secondary`, expected, timeoutMs));
  }
  if (standbys.length > 1) {
    const node1 = nodeDirs.get('node1')!;
    await withLog(node1, autoctl(node1, ['set', 'formation', 'number-sync-standbys', '1', '--pgdata', node1.pgdata], 30_000));
    const node1Connection = { host: '127.0.0.1', port: ports.get('node1')!, user: 'postgres', database: DATABASE };
    // pg_auto_failover names its standbys pgautofailover_standby_<node id>: the monitor's is 0, node1's 1.
    const quorum = `ANY 1 (${standbys.map((_, index) => `pgautofailover_standby_${index + 2}`).join(', ')})`;
    await withLog(
      node1,
      pollUntil(
        `node1 commits wait for ${quorum}`,
        async () => {
          const [row] = await queryOnce<{ names: string }>(node1Connection, "SELECT current_setting('synchronous_standby_names') AS names", [], 2_000);
          return row?.names === quorum ? true : undefined;
        },
        timeoutMs,
      ),
    );
    await withLog(node1, waitForStates('node1 is primary again', settledAs, timeoutMs));
  }
  startup.standbys = step();

  const { stdout } = await autoctl(monitor, ['show', 'uri', '--formation', 'default', '--monitor', monitorUrl], 30_000);
  const url = stdout.trim();

  const currentPrimary = async () => (await states()).find((n) => n.reportedState === n.goalState && PRIMARY_STATES.has(n.goalState))?.name;
  const waitForPrimary = (predicate: (name: string) => boolean, timeout: number) =>
    pollUntil(
      'the monitor names the primary asked for',
      async () => {
        const primary = await currentPrimary();
        return primary !== undefined && predicate(primary) ? primary : undefined;
      },
      timeout,
    );
  const nodes = [...nodeDirs.entries()].map(
    ([name, node]): FormationNode => ({
      name,
      port: ports.get(name)!,
      pgdata: node.pgdata,
      url: (database = DATABASE) => `postgres://postgres@127.0.0.1:${ports.get(name)}/${encodeURIComponent(database)}`,
      running: () => {
        const keeper = keepers.get(name);
        return keeper !== undefined && groupMembers(keeper.pid!).length > 0;
      },
    }),
  );
  const known = (name: string) => {
    const node = nodeDirs.get(name);
    if (node === undefined) throw new Error(`no node named ${name}; the nodes are ${[...nodeDirs.keys()].join(', ')}`);
    return node;
  };

  return {
    url,
    monitorUrl,
    nodes,
    startup,
    node: (name) => {
      known(name);
      return nodes.find((n) => n.name === name)!;
    },
    states,
    currentPrimary,
    waitForPrimary,
    waitUntilSettled: async (timeout) => {
      await pollUntil(
        'one node is primary and the others secondary',
        async () => {
          const now = await states();
          const settled = (state: string) => now.filter((n) => n.reportedState === state && n.goalState === state).length;
          return settled('primary') === 1 && settled('secondary') === now.length - 1 ? true : undefined;
        },
        timeout,
      );
    },
    killNode: async (name) => {
      const node = known(name);
      const keeper = keepers.get(name);
      // The keeper (and the postmaster, in its process group) frozen first, so that nothing restarts in between.
      if (keeper !== undefined) signalGroup(keeper.pid!, 'SIGSTOP');
      const postmaster = readPostmasterPid(node.pgdata);
      if (postmaster !== undefined) signalServer(node.pgdata, postmaster.pid, 'SIGKILL');
      if (keeper !== undefined) {
        const exited = exitOf(keeper);
        signalGroup(keeper.pid!, 'SIGKILL');
        await groupGone(keeper.pid!, 5_000);
        await within(`${name}'s pg_autoctl is reaped`, exited, 5_000);
      }
      await serverGone(node.pgdata, 5_000);
      removeLeftoverSharedMemory(node.pgdata);
    },
    startNode: async (name) => {
      const node = known(name);
      const keeper = keepers.get(name);
      if (keeper !== undefined && groupMembers(keeper.pid!).length > 0) throw new Error(`${name} runs already`);
      run(name, node);
    },
    switchover: async (timeout = 60_000) => {
      const before = await currentPrimary();
      const wait = String(Math.ceil(timeout / 1000));
      const perform = () => autoctl(monitor, ['perform', 'switchover', '--formation', 'default', '--monitor', monitorUrl, '--wait', wait], timeout + 5_000);
      // The monitor's perform_failover() can deadlock with a keeper's node_active() and is then rolled back whole,
      // having changed nothing (hapostgres/pg_auto_failover#1004; later pg_autoctl releases retry it themselves).
      for (let attempt = 1; ; attempt++) {
        try {
          await perform();
          break;
        } catch (error) {
          if (attempt === MONITOR_DEADLOCK_ATTEMPTS || !String(error).includes('deadlock detected')) throw error;
        }
      }
      return waitForPrimary((name) => name !== before, timeout);
    },
    events: async () =>
      (
        await queryOnce<{ line: string }>(
          monitorConnection,
          `SELECT to_char(eventtime, 'HH24:MI:SS.MS') || ' ' || nodename || ' ' || reportedstate || ' -> ' || goalstate || ': ' || description AS line
             FROM pgautofailover.event WHERE formationid = 'default' ORDER BY eventid`,
          [],
          5_000,
        )
      ).map((row) => row.line),
  };
}
