import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import { startAutoFailoverFormation } from '../helpers/pg-auto-failover.js';
import { closeClient, pollUntil, queryOnce } from '../helpers/postgres-servers.js';
import { PrimaryProxy } from '../helpers/primary-proxy.js';
import { startReplicatedPair } from '../helpers/replicated-postgres.js';
import { within } from '../helpers/until.js';

/**
 * The failover harness itself: real PostgreSQL processes that the tests of
 * failover kill, freeze and promote. Each part says how long it took in a
 * diagnostic line.
 */

const execFileAsync = promisify(execFile);
/** Measured: 5.2-6.4 s from the kill to the other node as primary, with the harness's health-check values. */
const FAILOVER_BOUND_MS = 20_000;

test('replicated pair: a committed row is on the synchronous standby, and on it still after the primary is killed and the standby promoted; the proxy follows', async (t) => {
  const started = Date.now();
  const pair = await startReplicatedPair(t);
  if (pair === undefined) return;
  t.diagnostic(`pair up in ${Date.now() - started} ms`);

  const [mode] = await pair.primary.query<{ synchronous_commit: string; fsync: string }>(
    "SELECT current_setting('synchronous_commit') AS synchronous_commit, current_setting('fsync') AS fsync",
  );
  assert.deepEqual(mode, { synchronous_commit: 'on', fsync: 'on' });
  const [replication] = await pair.primary.query('SELECT application_name, sync_state FROM pg_stat_replication');
  assert.deepEqual(replication, { application_name: 'standby', sync_state: 'sync' });

  const client = await pair.primary.connect();
  await client.query('CREATE TABLE plants (id bigint PRIMARY KEY, name text NOT NULL)');
  await client.query('BEGIN');
  await client.query("INSERT INTO plants VALUES (1, 'fern')");
  const { rows: inserted } = await client.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn() AS lsn');
  await client.query('COMMIT');
  // Synchronous: by the time COMMIT returns, the standby has flushed the insert's WAL.
  const { rows: flushed } = await client.query<{ flushed: boolean }>(
    'SELECT flush_lsn >= $1::pg_lsn AS flushed FROM pg_stat_replication WHERE application_name = $2',
    [inserted[0]?.lsn, 'standby'],
  );
  assert.deepEqual(flushed, [{ flushed: true }]);
  // synchronous_commit = on waits for the standby's flush, not its replay: a read there may come a moment early.
  await pollUntil(
    'the row is replayed on the standby',
    async () => ((await pair.standby.query('SELECT name FROM plants WHERE id = 1')).length === 1 ? true : undefined),
    5_000,
    20,
  );

  // The proxy follows the primary the HAProxy way: a health check on each node, every 100 ms.
  const proxy = await PrimaryProxy.start(t);
  proxy.follow([pair.primary.port, pair.standby.port], { intervalMs: 100 });
  await pollUntil('the proxy routes to the primary', async () => (proxy.target === pair.primary.port ? true : undefined), 5_000, 20);
  const throughProxy = new pg.Client({ connectionString: proxy.url(pair.database), connectionTimeoutMillis: 5_000 });
  const cut = new Promise<Error>((resolve) => throughProxy.on('error', resolve));
  await throughProxy.connect();
  assert.deepEqual((await throughProxy.query('SELECT inet_server_port() AS port')).rows, [{ port: pair.primary.port }]);

  pair.primary.kill('SIGKILL');
  const killed = Date.now();
  await pair.standby.promote();
  t.diagnostic(`promoted in ${Date.now() - killed} ms`);
  assert.equal(pair.primary.running(), false, 'the primary is dead');
  assert.deepEqual(await pair.standby.query('SELECT name FROM plants WHERE id = 1'), [{ name: 'fern' }]);
  await pair.standby.query("INSERT INTO plants VALUES (2, 'moss')");
  assert.deepEqual(await pair.standby.query('SELECT id::int, name FROM plants ORDER BY id'), [
    { id: 1, name: 'fern' },
    { id: 2, name: 'moss' },
  ]);
  t.diagnostic(`from the kill to a write on the promoted standby: ${Date.now() - killed} ms`);

  await pollUntil('the proxy routes to the promoted standby', async () => (proxy.target === pair.standby.port ? true : undefined), 5_000, 20);
  t.diagnostic(`the proxy followed ${Date.now() - killed} ms after the kill`);
  await within('the session through the proxy ends', cut, 5_000);
  const [viaProxy] = await queryOnce<{ port: number; recovery: boolean }>(
    { connectionString: proxy.url(pair.database) },
    'SELECT inet_server_port() AS port, pg_is_in_recovery() AS recovery',
  );
  assert.deepEqual(viaProxy, { port: pair.standby.port, recovery: false });
  // In between, no target while no node took writes, if a check fell in that moment.
  assert.deepEqual(
    proxy.switches.map((s) => s.target).filter((port) => port !== undefined),
    [pair.primary.port, pair.standby.port],
  );
  await closeClient(throughProxy);
  t.diagnostic(`the whole part: ${Date.now() - started} ms`);
});

test('replicated pair: a frozen primary (SIGSTOP) hangs its queries and new connections, and answers again after SIGCONT; the proxy switches', async (t) => {
  const started = Date.now();
  const pair = await startReplicatedPair(t);
  if (pair === undefined) return;
  const client = await pair.primary.connect({ query_timeout: 1_000 });
  assert.deepEqual((await client.query('SELECT 1 AS one')).rows, [{ one: 1 }]);

  pair.primary.kill('SIGSTOP');
  const frozen = Date.now();
  await assert.rejects(client.query('SELECT 1 AS one'), /timeout/i, 'a query on an open connection hangs');
  await assert.rejects(pair.primary.query('SELECT 1', [], 1_000), /timeout/i, 'a new connection hangs');
  t.diagnostic(`both hung past their 1 s timeouts in ${Date.now() - frozen} ms`);
  await closeClient(client);

  pair.primary.kill('SIGCONT');
  assert.deepEqual(await pair.primary.query('SELECT 1 AS one', [], 5_000), [{ one: 1 }]);
  await pair.primary.query('CREATE TABLE thawed (id int)');
  await pair.primary.query('INSERT INTO thawed VALUES (1)');
  await pollUntil(
    'the row is replayed on the standby',
    async () => ((await pair.standby.query('SELECT id FROM thawed')).length === 1 ? true : undefined),
    5_000,
    20,
  );

  // switchTo cuts the sessions open to the old target, even one that is well, and sends new ones to the new target.
  const proxy = await PrimaryProxy.start(t, pair.primary.port);
  const throughProxy = new pg.Client({ connectionString: proxy.url(pair.database), connectionTimeoutMillis: 5_000 });
  const cut = new Promise<Error>((resolve) => throughProxy.on('error', resolve));
  await throughProxy.connect();
  assert.deepEqual((await throughProxy.query('SELECT inet_server_port() AS port')).rows, [{ port: pair.primary.port }]);
  assert.equal(proxy.sessions, 1);
  await proxy.switchTo(pair.standby.port);
  assert.equal(proxy.sessions, 0);
  assert.match((await within('the session through the proxy ends', cut, 5_000)).message, /terminated|ended|closed/i);
  const [viaProxy] = await queryOnce(
    { connectionString: proxy.url(pair.database) },
    'SELECT inet_server_port() AS port, pg_is_in_recovery() AS recovery',
  );
  assert.deepEqual(viaProxy, { port: pair.standby.port, recovery: true });
  await proxy.switchTo(undefined);
  await assert.rejects(queryOnce({ connectionString: proxy.url(pair.database) }, 'SELECT 1', [], 2_000), 'with no target a connection is closed at once');
  await closeClient(throughProxy);
  t.diagnostic(`the whole part: ${Date.now() - started} ms`);
});

test('pg_auto_failover: the formation comes up, its URL works with psql, a killed primary is replaced, a switchover moves the primary', async (t) => {
  const started = Date.now();
  const formation = await startAutoFailoverFormation(t);
  if (formation === undefined) return;
  t.diagnostic(`formation up in ${Date.now() - started} ms (${JSON.stringify(formation.startup)}): ${formation.url}`);
  assert.match(formation.url, /^postgres:\/\/127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\/plants\?/);
  assert.match(formation.url, /target_session_attrs=read-write/);
  assert.match(formation.url, /sslmode=require/);
  assert.equal(await formation.currentPrimary(), 'node1');

  // libpq follows the multi-host URL to the node that takes writes, over TLS.
  // The URL names no user: libpq's PGUSER gives it.
  const psqlEnv = { ...process.env, PGUSER: 'postgres', PGCONNECT_TIMEOUT: '5' };
  const psql = async (sql: string) => (await execFileAsync('psql', [formation.url, '-XAt', '-c', sql], { env: psqlEnv, timeout: 15_000 })).stdout.trim();
  assert.equal(await psql('SELECT 1'), '1');
  assert.equal(await psql('SELECT inet_server_port()'), String(formation.node('node1').port));
  assert.equal(await psql('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()'), 't');
  await psql("CREATE TABLE plants (id bigint PRIMARY KEY, name text NOT NULL); INSERT INTO plants VALUES (1, 'fern')");

  const killed = Date.now();
  await formation.killNode('node1');
  assert.equal(formation.node('node1').running(), false);
  await assert.rejects(queryOnce({ connectionString: formation.node('node1').url() }, 'SELECT 1', [], 2_000), 'its Postgres is gone too');
  assert.equal(await formation.waitForPrimary((name) => name === 'node2', FAILOVER_BOUND_MS), 'node2');
  const failover = Date.now() - killed;
  assert.equal(await psql('SELECT inet_server_port()'), String(formation.node('node2').port));
  assert.equal(await psql('SELECT name FROM plants WHERE id = 1'), 'fern', 'the synchronous standby had the row');
  await psql("INSERT INTO plants VALUES (2, 'moss')");
  t.diagnostic(`failover after the kill: ${failover} ms (bound ${FAILOVER_BOUND_MS} ms)`);

  const restarted = Date.now();
  await formation.startNode('node1');
  await formation.waitUntilSettled(30_000);
  t.diagnostic(`node1 back as a secondary in ${Date.now() - restarted} ms`);

  const switched = Date.now();
  assert.equal(await formation.switchover(), 'node1');
  assert.equal(await psql('SELECT inet_server_port()'), String(formation.node('node1').port));
  assert.equal(await psql('SELECT count(*) FROM plants'), '2');
  t.diagnostic(`switchover in ${Date.now() - switched} ms; the whole part: ${Date.now() - started} ms`);
});
