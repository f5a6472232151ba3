import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import type { Connections } from '../../src/store/postgres/primary-pool.js';
import { inTransaction, rollBack } from '../../src/store/postgres/transaction.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';

/** A pool of one connection to a new database with a table `t (n INTEGER)`. */
async function onePool(t: TestContext): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: await freshPostgresDatabase(t), max: 1 });
  // The database is dropped first, with its connections (the hooks run in order): an idle one's end is no error.
  pool.on('error', () => undefined);
  t.after(() => pool.end());
  await pool.query('CREATE TABLE t (n INTEGER)');
  return pool;
}

const rows = async (pool: pg.Pool) => (await pool.query<{ n: number }>('SELECT n FROM t ORDER BY n')).rows.map((row) => row.n);

if (!(await postgresReachable())) {
  test('the PostgreSQL transaction helper', { skip: POSTGRES_SKIP_REASON }, () => undefined);
} else {
  test('work that resolves is committed; work that throws or answers rollBack(...) changes nothing', async (t) => {
    const pool = await onePool(t);
    assert.equal(await inTransaction(pool, async (client) => (await client.query('INSERT INTO t VALUES (1)')).rowCount), 1);
    await assert.rejects(
      inTransaction(pool, async (client) => {
        await client.query('INSERT INTO t VALUES (2)');
        throw new Error('the work failed');
      }),
      /the work failed/,
    );
    const answer = await inTransaction(pool, async (client) => {
      await client.query('INSERT INTO t VALUES (3)');
      return rollBack('nothing written' as const);
    });
    assert.equal(answer, 'nothing written');
    assert.deepEqual(await rows(pool), [1]);
  });

  test('a connection whose rollback failed is closed, not lent again inside its aborted transaction', async (t) => {
    const pool = await onePool(t);
    // The pool's one connection answers ROLLBACK with an error, as one whose network failed at that moment would.
    const failingRollback: Connections = {
      query: pool.query.bind(pool) as Connections['query'],
      async connect() {
        const client = await pool.connect();
        const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
        Object.assign(client, {
          query: (...args: unknown[]) => (args[0] === 'ROLLBACK' ? Promise.reject(new Error('connection lost')) : query(...args)),
        });
        return client;
      },
    };
    await assert.rejects(
      inTransaction(failingRollback, async (client) => {
        await client.query('INSERT INTO t VALUES (1)');
        await client.query('SELECT 1 / 0');
      }),
      /division by zero/,
    );
    // Lent again, the connection would still be in the aborted transaction: 25P02 for every statement.
    assert.deepEqual(await rows(pool), []);
    assert.equal(pool.totalCount, 1, 'a new connection');
  });
}
