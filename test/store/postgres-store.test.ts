import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { ServiceError } from '../../src/errors.js';
import { migrate, migrations } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { storeContract } from './store-contract.js';

if (!(await postgresReachable())) {
  test('PostgreSQL store', { skip: POSTGRES_SKIP_REASON }, () => undefined);
} else {
  storeContract('postgres', async (t) => {
    const store = await PostgresStore.open(await freshPostgresDatabase(t), { poolSize: 4 });
    t.after(() => store.close());
    return store;
  });

  test('postgres: commits are durable as the store sees the server: synchronous_commit and fsync on', async (t) => {
    const store = await PostgresStore.open(await freshPostgresDatabase(t), { poolSize: 2 });
    t.after(() => store.close());
    assert.deepEqual(await store.settings(), { synchronousCommit: 'on', fsync: 'on' });
  });

  test('postgres: ids are BIGINT and stored exactly', async (t) => {
    const url = await freshPostgresDatabase(t);
    const store = await PostgresStore.open(url, { poolSize: 2 });
    t.after(() => store.close());
    await store.createPlants([{ id: 2n ** 63n - 1n, name: 'max' }, { id: 2n ** 53n + 1n, name: 'odd' }]);
    const client = new pg.Client(url);
    await client.connect();
    const { rows } = await client.query('SELECT id::text AS id, pg_typeof(id)::text AS type FROM plants ORDER BY plants.id');
    await client.end();
    assert.deepEqual(rows, [
      { id: '9007199254740993', type: 'bigint' },
      { id: '9223372036854775807', type: 'bigint' },
    ]);
  });

  test('postgres: migrations racing from several instances apply each step once', async (t) => {
    const url = await freshPostgresDatabase(t);
    const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: url, max: 1 }));
    await Promise.all(pools.map((pool) => migrate(pool)));
    const { rows } = await pools[0]!.query('SELECT version FROM schema_migrations ORDER BY version');
    await Promise.all(pools.map((pool) => pool.end()));
    assert.deepEqual(rows, migrations.map(({ version }) => ({ version })));
    // And the stores opened on it afterwards find it current.
    const stores = await Promise.all([1, 2, 3].map(() => PostgresStore.open(url, { poolSize: 1 })));
    await Promise.all(stores.map((store) => store.close()));
  });

  test('postgres: a database from a newer build is refused', async (t) => {
    const url = await freshPostgresDatabase(t);
    await (await PostgresStore.open(url, { poolSize: 1 })).close();
    const client = new pg.Client(url);
    await client.connect();
    await client.query("INSERT INTO schema_migrations (version, name) VALUES (999, 'future')");
    await client.end();
    await assert.rejects(PostgresStore.open(url, { poolSize: 1 }), /the database schema is at version 999, newer than this build knows/);
  });

  test('postgres: an unreachable database is STORE_UNAVAILABLE, at open and later', async (t) => {
    await assert.rejects(
      PostgresStore.open('postgres://postgres@127.0.0.1:1/none', { poolSize: 1, connectTimeoutMs: 500 }),
      (error: unknown) => error instanceof ServiceError && error.code === 'STORE_UNAVAILABLE',
    );
    const store = await PostgresStore.open(await freshPostgresDatabase(t), { poolSize: 1 });
    await store.close();
    await assert.rejects(store.ping(), (error: unknown) => error instanceof ServiceError && error.code === 'STORE_UNAVAILABLE');
  });
}
