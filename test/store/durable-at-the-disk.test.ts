import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { existingStoreUrl, postgres, sqlite } from '../helpers/backends.js';
import { postgresReachable, POSTGRES_SKIP_REASON } from '../helpers/postgres.js';
import { createToken, postPlant, startServer } from '../helpers/processes.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until, within } from '../helpers/until.js';

// "A 200 is never lost" is a promise about the disk: a process killed with
// kill -9 leaves the page cache behind, so a commit answered before it was
// synced survives it. These tests look where the promise lives: the system
// calls of the SQLite server, and PostgreSQL's count of WAL syncs.

/** Creates sent one after another, each waiting for its answer. */
const CREATES = 20;

function hasStrace(): boolean {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('sqlite: every 200 is written to its socket after an fsync of the WAL that follows the write of its plant', async (t) => {
  if (!requireOrSkip(t, 'strace is not installed (apt-get install strace)', hasStrace())) return;
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  const server = await startServer(t, env);

  // Attached to every thread of the running server; strace leaves it running when it detaches.
  const trace = join(tempDir(t), 'server.strace');
  const strace = spawn(
    'strace',
    ['-f', '-y', '-tt', '-s', '65536', '-e', 'trace=fsync,fdatasync,pwrite64,write,writev,sendmsg', '-o', trace, '-p', String(server.child.pid)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  t.after(() => strace.kill('SIGKILL'));
  let straceSays = '';
  strace.stderr!.setEncoding('utf8').on('data', (chunk: string) => (straceSays += chunk));
  await until('strace is attached', () => /attached/.test(straceSays) || strace.exitCode !== null);
  assert.equal(strace.exitCode, null, `strace could not attach: ${straceSays}`);

  const names = Array.from({ length: CREATES }, (_, i) => `durable-${i}-${process.hrtime.bigint()}`);
  for (const [i, name] of names.entries()) {
    const created = await postPlant(server.url, token, `{"id":${9007199254740993n + BigInt(i)},"name":"${name}"}`);
    assert.equal(created.status, 200, created.body);
  }
  const detached = once(strace, 'exit');
  strace.kill('SIGINT');
  await within('strace detaches', detached, 10_000);
  await server.stop();

  const calls = readFileSync(trace, 'utf8').split('\n');
  const walWrite = (line: string) => /pwrite64\(\d+<[^>]*-wal>/.test(line);
  const walSync = (line: string) => /f(data)?sync\(\d+<[^>]*-wal>/.test(line);
  const socketWrite = (line: string) => /(write|writev|sendmsg)\(\d+<(socket|TCP|TCPv6):/.test(line) && line.includes('HTTP/1.1 200');
  assert.ok(calls.some(walSync), 'the WAL is synced at all');
  for (const name of names) {
    const written = calls.findIndex((line) => walWrite(line) && line.includes(name));
    const answered = calls.findIndex((line) => socketWrite(line) && line.includes(name));
    assert.ok(written >= 0, `the WAL write that holds ${name} is traced`);
    assert.ok(answered > written, `the 200 for ${name} is written after its plant reached the WAL`);
    // Every WAL write before the answer (the rest of its commit's frames too) is synced before it.
    const lastWrite = calls.slice(0, answered).findLastIndex(walWrite);
    const synced = calls.slice(lastWrite + 1, answered).some(walSync);
    assert.ok(synced, `the 200 for ${name} was written before the WAL holding it was synced`);
  }
});

test('postgres: each create, sent one after another, is flushed to the WAL before its answer', async (t) => {
  if (!(await postgresReachable())) {
    t.skip(POSTGRES_SKIP_REASON);
    return;
  }
  const env = { DATABASE_URL: await existingStoreUrl(t, postgres) };
  const token = await createToken(env, 'ci');
  const server = await startServer(t, env);
  // pg_stat_wal is the cluster's: read from the database next to the test's, which outlives it.
  const admin = new pg.Client({ connectionString: env.DATABASE_URL.replace(/\/[^/?]+(\?|$)/, '/postgres$1') });
  await admin.connect();
  t.after(() => admin.end());
  // A backend adds its WAL counts to pg_stat_wal at most once a second, and always when it exits.
  const walSyncs = async () => Number((await admin.query<{ wal_sync: string }>('SELECT wal_sync FROM pg_stat_wal')).rows[0]!.wal_sync);
  await recordCommitSettings(env.DATABASE_URL);
  const before = await walSyncs();

  const creates = 5 * CREATES;
  for (let i = 0; i < creates; i++) {
    const created = await postPlant(server.url, token, `{"id":${i},"name":"flushed ${i}"}`);
    assert.equal(created.status, 200, created.body);
  }
  await server.stop();

  // Read in each transaction that wrote plants, on the session that wrote them: a SET or SET LOCAL there shows.
  assert.deepEqual(await commitSettings(env.DATABASE_URL), [{ synchronous_commit: 'on', plants: creates }], 'every transaction that wrote plants had synchronous_commit on');

  // With synchronous_commit off, a commit returns before its WAL is flushed and the WAL writer syncs on
  // its own schedule, a few times in the second these creates take: far fewer syncs than commits.
  let after = before;
  await until(`${creates} WAL syncs are counted`, async () => {
    after = await walSyncs();
    return after - before >= creates;
  }).catch((error: unknown) => {
    throw new Error(`${after - before} WAL syncs for ${creates} creates: commits were not flushed before their answer (${String(error)})`);
  });
});

/** Runs `work` on a connection of its own to `databaseUrl`, closed after it. */
async function onConnection<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Records, from inside every statement that inserts plants, the
 * synchronous_commit of its own transaction and how many plants it wrote:
 * the setting that decides whether that commit is flushed before it returns.
 */
async function recordCommitSettings(databaseUrl: string): Promise<void> {
  await onConnection(databaseUrl, async (client) => {
    await client.query(`CREATE TABLE plant_writes (synchronous_commit text NOT NULL, plants int NOT NULL)`);
    await client.query(`CREATE FUNCTION record_plant_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO plant_writes SELECT current_setting('synchronous_commit'), count(*) FROM written;
        RETURN NULL;
      END $$`);
    await client.query(`CREATE TRIGGER record_plant_write AFTER INSERT ON plants
      REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION record_plant_write()`);
  });
}

/** The plants written under each synchronous_commit, as recordCommitSettings recorded them. */
function commitSettings(databaseUrl: string): Promise<{ synchronous_commit: string; plants: number }[]> {
  return onConnection(databaseUrl, async (client) => {
    const sql = 'SELECT synchronous_commit, sum(plants)::int AS plants FROM plant_writes GROUP BY synchronous_commit';
    return (await client.query<{ synchronous_commit: string; plants: number }>(sql)).rows;
  });
}
