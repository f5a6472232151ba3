import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import { migrate as migratePostgres, migrations as postgresMigrations } from '../../src/store/postgres/migrations.js';
import { CALL_CREATE_PLANT_BATCH } from '../../src/store/postgres/plant-batch.js';
import Database from 'better-sqlite3';
import { migrate as migrateSqlite, migrations as sqliteMigrations } from '../../src/store/sqlite/migrations.js';
import { decodeTraceParents, encodePlantIds, encodeTraceParents } from '../../src/store/sqlite/plant-batch.js';
import type { Store } from '../../src/store/store.js';
import type { ClaimedMessage } from '../../src/store/webhook-store.js';
import { addSubscription } from '../../src/webhooks/subscriptions.js';
import { testBackends } from '../helpers/backends.js';

/*
 * Each created plant's W3C traceparent is kept with its webhook messages, in
 * the plant's own transaction, and handed back by the claims that deliver
 * them, whatever the backend.
 */

const traceParent = (digit: string, flags = '01') => `00-${digit.repeat(32)}-${digit.repeat(16)}-${flags}`;
const [A, C, D] = [traceParent('a'), traceParent('c', '00'), traceParent('d')];
const claimAll = (store: Store, subscriptionId: number, owner = 'a') => store.webhooks.claimMessages({ subscriptionId, owner, limit: 100, leaseMs: 60_000 });
/** Each claimed message's plant and traceparent. */
const traced = (messages: readonly ClaimedMessage[]) => messages.map((message) => [message.plant.id, message.traceParent]);

test('sqlite: traceparents pack into 25 bytes a plant, zeros for none, and a batch without any packs into nothing', () => {
  const packed = encodeTraceParents([A, undefined, C]);
  assert.equal(packed?.length, 75);
  assert.deepEqual(packed.subarray(25, 50), Buffer.alloc(25), 'a plant without one is zeros');
  assert.deepEqual(packed.subarray(0, 25).toString('hex'), `${'a'.repeat(32)}${'a'.repeat(16)}01`);
  assert.deepEqual(decodeTraceParents(packed), [A, null, C]);
  // As a BLOB comes back from SQLite: a view on a larger buffer.
  const larger = Buffer.concat([Buffer.alloc(3), packed]);
  const view = new Uint8Array(larger.buffer, larger.byteOffset + 3, 75);
  assert.deepEqual(decodeTraceParents(view), [A, null, C]);
  assert.equal(encodeTraceParents([undefined, undefined]), null);
  assert.equal(encodeTraceParents([]), null);
  // What is not a traceparent (another version, upper case, a zero trace id, a wrong length) is none.
  const malformed = ['01' + A.slice(2), A.toUpperCase(), traceParent('0'), `${A}-extra`, A.slice(0, 54), ''];
  assert.equal(encodeTraceParents(malformed), null);
  assert.deepEqual(decodeTraceParents(encodeTraceParents([...malformed, D])!), [...malformed.map(() => null), D]);
});

const backends = await testBackends('traceparents of webhook messages');

for (const { name: backend, freshUrl } of backends) {
  const openFresh = async (t: TestContext): Promise<{ url: string; store: Store; subscriptionId: number }> => {
    const url = await freshUrl(t);
    const store = await openStore({ database: parseDatabaseUrl(url, 'test'), databasePoolSize: 2 });
    t.after(() => store.close());
    // Created before the subscription: its own create writes no message.
    assert.deepEqual(await store.createPlants([{ id: 10n, name: 'earlier' }]), [{ outcome: 'created' }]);
    const added = await addSubscription(store.webhooks, 'http://127.0.0.1:9/hook', 'traced');
    assert.ok(added.added);
    return { url, store, subscriptionId: added.subscription.id };
  };

  test(`${backend}: each created plant's message carries its own traceparent; a replay gets no message`, async (t) => {
    const { url, store, subscriptionId } = await openFresh(t);
    const results = await store.createPlants(
      [{ id: 1n, name: 'one' }, { id: 2n, name: 'two' }, { id: 3n, name: 'three' }, { id: 10n, name: 'earlier' }],
      [A, undefined, C, D],
    );
    assert.deepEqual(results.map((result) => result.outcome), ['created', 'created', 'created', 'replayed']);
    const [packed] = await batchTraceParents(url);
    assert.notEqual(packed, null, 'the batch row holds the traceparents');
    assert.deepEqual(traced(await claimAll(store, subscriptionId)), [[1n, A], [2n, null], [3n, C]]);
  });

  test(`${backend}: a batch without traceparents, or whose plants have none, writes messages without one and NULL in its batch row`, async (t) => {
    const { url, store, subscriptionId } = await openFresh(t);
    await store.createPlants([{ id: 1n, name: 'one' }, { id: 2n, name: 'two' }]);
    // What is not a traceparent is kept as none.
    await store.createPlants([{ id: 3n, name: 'three' }, { id: 4n, name: 'four' }], [undefined, A.toUpperCase()]);
    // Only the replay has one: the plants created have none.
    await store.createPlants([{ id: 5n, name: 'five' }, { id: 1n, name: 'one' }], [undefined, A]);
    assert.deepEqual(await batchTraceParents(url), [null, null, null]);
    assert.deepEqual(traced(await claimAll(store, subscriptionId)), [[1n, null], [2n, null], [3n, null], [4n, null], [5n, null]]);
  });

  test(`${backend}: a plant repeated in its batch keeps the traceparent of the create that made it`, async (t) => {
    const { store, subscriptionId } = await openFresh(t);
    const results = await store.createPlants([{ id: 1n, name: 'one' }, { id: 1n, name: 'one' }, { id: 2n, name: 'two' }], [undefined, A, C]);
    assert.deepEqual(results.map((result) => result.outcome), ['created', 'replayed', 'created']);
    assert.deepEqual(traced(await claimAll(store, subscriptionId)), [[1n, null], [2n, C]]);
  });

  test(`${backend}: a message keeps its traceparent once unpacked: claimed, released and claimed again, and unpacked pending beside a claim`, async (t) => {
    const { store, subscriptionId } = await openFresh(t);
    await store.createPlants([{ id: 1n, name: 'one' }, { id: 2n, name: 'two' }, { id: 3n, name: 'three' }], [A, undefined, C]);
    // A claim of one unpacks the whole batch: the first message claimed, the others pending as rows of their own.
    const [first] = await store.webhooks.claimMessages({ subscriptionId, owner: 'a', limit: 1, leaseMs: 60_000 });
    assert.deepEqual(traced([first!]), [[1n, A]]);
    await store.webhooks.settleMessages('a', [{ messageId: first!.id, subscriptionId, attempt: first!.attempt, outcome: 'released' }]);
    const again = await claimAll(store, subscriptionId, 'b');
    assert.deepEqual(traced(again), [[1n, A], [2n, null], [3n, C]]);
    assert.equal(again[0]!.id, first!.id, 'the same message');
    assert.equal(again[0]!.attempt, 1, 'its released attempt uncounted');
  });
}

/** The trace_parents of every webhook_batches row, oldest first: null, or packed (as SQLite holds it) or an array (PostgreSQL). */
async function batchTraceParents(url: string): Promise<unknown[]> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    try {
      return db.prepare('SELECT trace_parents FROM webhook_batches ORDER BY id').pluck().all();
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ trace_parents: unknown }>('SELECT trace_parents FROM webhook_batches ORDER BY id')).rows.map((row) => row.trace_parents);
  } finally {
    await client.end();
  }
}

for (const { name: backend, freshUrl } of backends.filter(({ name }) => name === 'postgres')) {
  test(`${backend}: the batch function the store calls behind a pooler keeps the traceparents; the one of three arguments, which older instances call, still writes batches, without`, async (t) => {
    const url = await freshUrl(t);
    const store = await openStore({ database: parseDatabaseUrl(url, 'test'), databasePoolSize: 2 });
    t.after(() => store.close());
    const added = await addSubscription(store.webhooks, 'http://127.0.0.1:9/hook', 'traced');
    assert.ok(added.added);
    const client = new pg.Client(url);
    await client.connect();
    try {
      await client.query('INSERT INTO plants (id, name) VALUES (10, $1)', ['earlier']);
      const batch = await client.query(CALL_CREATE_PLANT_BATCH, [['1', '2', '3', '10'], ['a', 'b', 'c', 'earlier'], [null, null, null, null], [A, null, C, D]]);
      assert.deepEqual(batch.rows, [{ plants_created: 3, messages_written: 3, created_ids: ['1', '2', '3'] }]);
      const untraced = await client.query(CALL_CREATE_PLANT_BATCH, [['4'], ['d'], [null], null]);
      assert.deepEqual(untraced.rows, [{ plants_created: 1, messages_written: 1, created_ids: null }]);
      const older = await client.query('SELECT plants_created, messages_written FROM create_plant_batch($1::bigint[], $2::text[], $3::text[])', [['5', '1'], ['e', 'a'], [null, null]]);
      assert.deepEqual(older.rows, [{ plants_created: 1, messages_written: 1 }]);
    } finally {
      await client.end();
    }
    assert.deepEqual(await batchTraceParents(url), [[A, null, C], null, null]);
    const claimed = await store.webhooks.claimMessages({ subscriptionId: added.subscription.id, owner: 'a', limit: 100, leaseMs: 60_000 });
    assert.deepEqual(traced(claimed), [[1n, A], [2n, null], [3n, C], [4n, null], [5n, null]]);
  });
}

/** The steps before traceparents were kept. */
const beforeTraces = <Step extends { name: string }>(steps: readonly Step[]) =>
  steps.filter((step) => step.name !== 'keep the trace context of the create that made each webhook message');

for (const { name: backend, freshUrl } of backends) {
  test(`${backend}: the packed messages an older build left are claimed, without a traceparent`, async (t) => {
    const url = await freshUrl(t);
    if (backend === 'sqlite') {
      const db = new Database(url.slice('sqlite:'.length));
      migrateSqlite(db, beforeTraces(sqliteMigrations));
      db.prepare(`INSERT INTO webhook_subscriptions (url, secret, key, created_at) VALUES ('http://127.0.0.1:9/hook', 'whsec_bmV3', 'k', 0)`).run();
      db.prepare(`INSERT INTO plants (id, name, created_at) VALUES (1, 'a', 0)`).run();
      db.prepare('INSERT INTO webhook_batches (subscription_id, created_at, plants, plant_ids) VALUES (1, 0, 1, ?)').run(encodePlantIds([1n]));
      db.close();
    } else {
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        await migratePostgres(pool, beforeTraces(postgresMigrations));
        await pool.query(`INSERT INTO webhook_subscriptions (url, secret, key, created_at) VALUES ('http://127.0.0.1:9/hook', 'whsec_bmV3', 'k', now())`);
        await pool.query(`SELECT * FROM create_plant_batch('{1}', '{a}', '{NULL}')`);
      } finally {
        await pool.end();
      }
    }
    const store = await openStore({ database: parseDatabaseUrl(url, 'test'), databasePoolSize: 2 });
    t.after(() => store.close());
    const [subscription] = await store.webhooks.activeSubscriptions();
    assert.deepEqual(traced(await claimAll(store, subscription!.id)), [[1n, null]]);
  });
}
