import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { migrate as migratePostgres, migrations as postgresMigrations } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import Database from 'better-sqlite3';
import { migrate as migrateSqlite, migrations as sqliteMigrations } from '../../src/store/sqlite/migrations.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The steps before retired secrets got a table of their own: one previous_secret column a subscription. */
const beforeRetiredSecrets = <Step extends { name: string }>(steps: readonly Step[]) =>
  steps.slice(0, steps.findIndex((step) => step.name === 'keep every retired webhook secret until its own window ends'));
const until = new Date('2030-01-01T12:00:00.000Z');

test('sqlite: a store from before retired secrets keeps its previous secret and its end after the upgrade', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  const db = new Database(path);
  migrateSqlite(db, beforeRetiredSecrets(sqliteMigrations));
  const insert = db.prepare(
    `INSERT INTO webhook_subscriptions (url, secret, key, previous_secret, previous_secret_until, created_at, removed_at)
     VALUES (?, 'whsec_bmV3', 'k', ?, ?, 0, ?)`,
  );
  insert.run('http://127.0.0.1:9/rotated', 'whsec_b2xk', until.getTime(), null);
  insert.run('http://127.0.0.1:9/never-rotated', null, null, null);
  insert.run('http://127.0.0.1:9/removed', 'whsec_Z29uZQ==', until.getTime(), 1);
  db.close();

  const store = SqliteStore.open(path);
  t.after(() => store.close());
  assert.deepEqual(
    (await store.webhooks.activeSubscriptions()).map(({ url, secret, retiredSecrets }) => ({ url, secret, retiredSecrets })),
    [
      { url: 'http://127.0.0.1:9/rotated', secret: 'whsec_bmV3', retiredSecrets: [{ secret: 'whsec_b2xk', until }] },
      { url: 'http://127.0.0.1:9/never-rotated', secret: 'whsec_bmV3', retiredSecrets: [] },
    ],
  );
});

test('postgres: a store from before retired secrets keeps its previous secret and its end after the upgrade', { skip: (await postgresReachable()) ? false : POSTGRES_SKIP_REASON }, async (t) => {
  const url = await freshPostgresDatabase(t);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await migratePostgres(pool, beforeRetiredSecrets(postgresMigrations));
    const insert = `INSERT INTO webhook_subscriptions (url, secret, key, previous_secret, previous_secret_until, created_at, removed_at)
                    VALUES ($1, 'whsec_bmV3', 'k', $2, $3, now(), $4)`;
    await pool.query(insert, ['http://127.0.0.1:9/rotated', 'whsec_b2xk', until, null]);
    await pool.query(insert, ['http://127.0.0.1:9/never-rotated', null, null, null]);
    await pool.query(insert, ['http://127.0.0.1:9/removed', 'whsec_Z29uZQ==', until, new Date()]);
  } finally {
    await pool.end();
  }

  const store = await PostgresStore.open(url, { poolSize: 1 });
  t.after(() => store.close());
  assert.deepEqual(
    (await store.webhooks.activeSubscriptions()).map(({ url, secret, retiredSecrets }) => ({ url, secret, retiredSecrets })),
    [
      { url: 'http://127.0.0.1:9/rotated', secret: 'whsec_bmV3', retiredSecrets: [{ secret: 'whsec_b2xk', until }] },
      { url: 'http://127.0.0.1:9/never-rotated', secret: 'whsec_bmV3', retiredSecrets: [] },
    ],
  );
});
