import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { ServiceError } from '../../src/errors.js';
import { migrations } from '../../src/store/sqlite/migrations.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { errorBody, testApp } from '../helpers/test-app.js';
import { storeContract } from './store-contract.js';

storeContract('sqlite', async (t) => {
  const store = SqliteStore.open(join(tempDir(t), 'plantstore.db'));
  t.after(() => store.close());
  return store;
});

test('the file is in WAL mode with synchronous=FULL, so every commit is durable, and the page cache is bounded at 2 MiB', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  const store = SqliteStore.open(path);
  t.after(() => store.close());
  assert.deepEqual(store.settings(), { journalMode: 'wal', synchronous: 'full', cacheSize: '2048 KiB' });
});

test('the folder of the database file is created when missing', async (t) => {
  const path = join(tempDir(t), 'a', 'b', 'plantstore.db');
  const store = SqliteStore.open(path);
  await store.close();
  const db = new Database(path, { readonly: true });
  assert.deepEqual(db.prepare('SELECT count(*) AS n FROM plants').get(), { n: 0 });
  db.close();
});

test('migrations run once: a second start finds the schema current and keeps the data', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  const first = SqliteStore.open(path);
  await first.createPlants([{ id: 1n, name: 'kept' }]);
  await first.close();
  const second = SqliteStore.open(path);
  assert.deepEqual(await second.listPlants({ limit: 10 }), [{ id: 1n, name: 'kept' }]);
  await second.close();
  const db = new Database(path, { readonly: true });
  const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
  db.close();
  assert.deepEqual(versions, migrations.map(({ version }) => ({ version })));
});

test('a database from a newer build is refused, not damaged', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  await SqliteStore.open(path).close();
  const db = new Database(path);
  db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)").run();
  db.close();
  assert.throws(() => SqliteStore.open(path), {
    message: `the database schema is at version 999, newer than this build knows (${migrations.at(-1)!.version}); run a newer plantstore`,
  });
});

test('a store that cannot be used answers 503 with Retry-After, and the process lives on', async (t) => {
  const { post, store } = await testApp(t, { tokenCacheTtlMs: 1000 });
  assert.equal((await post({ id: 1, name: 'before' })).statusCode, 200);
  await store.close();
  const response = await post({ id: 2, name: 'after' });
  assert.equal(response.statusCode, 503);
  assert.equal(response.headers['retry-after'], '1');
  assert.equal(errorBody(response).message, 'The store cannot take writes right now; retry later');
  await assert.rejects(store.ping(), (error: unknown) => error instanceof ServiceError && error.code === 'STORE_UNAVAILABLE');
});

test('readiness follows the store while liveness does not', async (t) => {
  const { app, store } = await testApp(t);
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 200);
  assert.deepEqual(ready.json(), { status: 'ok' });
  await store.close();
  const notReady = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(notReady.statusCode, 503);
  assert.equal(notReady.headers['retry-after'], '1');
  assert.equal(errorBody(notReady).message, 'The store cannot take writes right now; retry later');
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});
