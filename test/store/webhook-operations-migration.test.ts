import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import pg from 'pg';
import { migrate as migratePostgres, migrations as postgresMigrations } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { Store } from '../../src/store/store.js';
import Database from 'better-sqlite3';
import { migrate as migrateSqlite, migrations as sqliteMigrations } from '../../src/store/sqlite/migrations.js';
import { encodePlantIds } from '../../src/store/sqlite/plant-batch.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The steps before subscriptions could be paused and messages resent. */
const beforePausing = <Step extends { name: string }>(steps: readonly Step[]) =>
  steps.slice(0, steps.findIndex((step) => step.name === 'pause webhook subscriptions, queue messages again, keep each message its last result'));
const committedAt = new Date('2020-01-01T12:00:00.000Z');

/** What an upgraded store must do with the subscription and the two pending messages an older build left. */
async function assertUpgraded(t: TestContext, store: Store): Promise<void> {
  t.after(() => store.close());
  const [subscription] = await store.webhooks.activeSubscriptions();
  assert.equal(subscription?.pausedAt, null, 'an existing subscription is active');
  assert.deepEqual((await store.webhooks.listMessages({ subscriptionId: subscription.id, limit: 10 })).map((message) => [message.plantId, message.state]), [
    [2n, 'pending'],
    [1n, 'pending'],
  ]);
  const claimed = await store.webhooks.claimMessages({ subscriptionId: subscription.id, owner: 'a', limit: 10, leaseMs: 60_000 });
  assert.deepEqual(
    claimed.map((message) => [message.plant.id, message.queuedAt.getTime()]),
    [
      [1n, committedAt.getTime()],
      [2n, committedAt.getTime()],
    ],
    'never queued again: the retry window runs from the commit, as before',
  );
  assert.equal(await store.webhooks.setPaused(subscription.id, true), true);
}

test('sqlite: a store from before pausing keeps its subscriptions active and its pending messages, packed or not', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  const db = new Database(path);
  migrateSqlite(db, beforePausing(sqliteMigrations));
  const at = committedAt.getTime();
  db.prepare(`INSERT INTO webhook_subscriptions (url, secret, key, created_at) VALUES ('http://127.0.0.1:9/hook', 'whsec_bmV3', 'k', 0)`).run();
  db.prepare(`INSERT INTO plants (id, name, created_at) VALUES (1, 'a', ?), (2, 'b', ?)`).run(at, at);
  db.prepare('INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at) VALUES (1, 1, ?, ?)').run(at, at);
  db.prepare('INSERT INTO webhook_batches (subscription_id, created_at, plants, plant_ids) VALUES (1, ?, 1, ?)').run(at, encodePlantIds([2n]));
  db.close();
  await assertUpgraded(t, SqliteStore.open(path));
});

test('postgres: a store from before pausing keeps its subscriptions active and its pending messages', { skip: (await postgresReachable()) ? false : POSTGRES_SKIP_REASON }, async (t) => {
  const url = await freshPostgresDatabase(t);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await migratePostgres(pool, beforePausing(postgresMigrations));
    await pool.query(`INSERT INTO webhook_subscriptions (url, secret, key, created_at) VALUES ('http://127.0.0.1:9/hook', 'whsec_bmV3', 'k', now())`);
    await pool.query(`INSERT INTO plants (id, name) VALUES (1, 'a'), (2, 'b')`);
    await pool.query('INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at) VALUES (1, 1, $1, $1), (1, 2, $1, $1)', [committedAt]);
  } finally {
    await pool.end();
  }
  await assertUpgraded(t, await PostgresStore.open(url, { poolSize: 1 }));
});
