import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import pg from 'pg';
import { ServiceError } from '../../src/errors.js';
import { migrate, migrations } from '../../src/store/postgres/migrations.js';
import { CALL_CREATE_PLANT_BATCH, INSERT_PLANTS_STATEMENT } from '../../src/store/postgres/plant-batch.js';
import { ACTIVE_SUBSCRIPTIONS_STATEMENT, CLAIM_STATEMENT, SETTLE_STATEMENT } from '../../src/store/postgres/webhook-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { CLAIM_MESSAGES } from '../../src/store/postgres/webhook-claim.js';
import { SETTLE_MESSAGES, settlementValues } from '../../src/store/postgres/webhook-settle.js';
import type { ClaimedMessage, Settlement } from '../../src/store/webhook-store.js';
import { addSubscription } from '../../src/webhooks/subscriptions.js';
import { fleetSkipReason, freshPooledDatabase } from '../helpers/fleet.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { type ParsedStatement, readParses } from '../helpers/postgres-parses.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { until, within } from '../helpers/until.js';
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

  test('postgres: a claim reads only the messages it takes, however long the backlog', async (t) => {
    const { url, store, id } = await storeWithASubscription(t);
    // Batches as creates write them: many messages share their batch's due time. No ANALYZE runs,
    // as none has on a table that grew this fast in production.
    for (let batch = 0; batch < 40; batch++) {
      await store.createPlants(Array.from({ length: 100 }, (_, i) => ({ id: BigInt(batch * 100 + i + 1), name: 'backlog' })));
    }
    // Unpacked into 4,000 messages, every one due again at once, as retries would be.
    const unpacked = await store.webhooks.claimMessages({ subscriptionId: id, owner: 'unpack', limit: 4_000, leaseMs: 0 });
    assert.equal(unpacked.length, 4_000);
    await underBothPlanModes(url, 'claim', CLAIM_MESSAGES, (client, mode) => assertReadsOnlyWhatItTakes(client, id, mode));
  });

  test('postgres: a settlement reads only the messages it settles, however many were delivered before', async (t) => {
    const { url, store, id } = await storeWithASubscription(t);
    for (let batch = 0; batch < 40; batch++) {
      await store.createPlants(Array.from({ length: 100 }, (_, i) => ({ id: BigInt(batch * 100 + i + 1), name: 'delivered' })));
    }
    // 3,968 messages delivered before: each leaves its entry in the due index until a vacuum.
    const earlier = await store.webhooks.claimMessages({ subscriptionId: id, owner: 'earlier', limit: 3_968, leaseMs: 60_000 });
    await store.webhooks.settleMessages('earlier', earlier.map((message) => delivered(id, message)));
    const claimed = await store.webhooks.claimMessages({ subscriptionId: id, owner: 'explain', limit: 32, leaseMs: 60_000 });
    assert.equal(claimed.length, 32);
    await underBothPlanModes(url, 'settle', SETTLE_MESSAGES, (client, mode) => assertSettlesOnlyItsOwn(client, id, claimed, mode));
  });

  test('postgres: the batch functions, called behind a pooler, write the packed messages the named statement does', async (t) => {
    const { url, store, id } = await storeWithASubscription(t);
    const client = new pg.Client(url);
    await client.connect();
    try {
      const batch = await client.query(CALL_CREATE_PLANT_BATCH, [['1', '2'], ['a', 'b'], [null, null], null]);
      assert.deepEqual(batch.rows, [{ plants_created: 2, messages_written: 2, created_ids: null }]);
      // The function of migration 3, which instances of older builds call: 2 is taken, so one message.
      const older = await client.query('SELECT id::text, messages FROM create_plants($1::bigint[], $2::text[], $3::text[])', [['3', '2'], ['c', 'b'], [null, null]]);
      assert.deepEqual(older.rows, [{ id: '3', messages: 1 }]);
      const written = await client.query('SELECT (SELECT count(*)::int FROM webhook_batches) AS batches, (SELECT count(*)::int FROM webhook_messages) AS messages');
      assert.deepEqual(written.rows, [{ batches: 2, messages: 0 }], 'packed, one row a batch');
    } finally {
      await client.end();
    }
    await store.createPlants([{ id: 4n, name: 'd' }]);
    const claimed = await store.webhooks.claimMessages({ subscriptionId: id, owner: 'a', limit: 10, leaseMs: 60_000 });
    assert.deepEqual(claimed.map((message) => message.plant.id), [1n, 2n, 3n, 4n]);
  });

  // A removal's statement, in two steps with a pause between: the subscription, then its pending messages.
  const removalSteps = [
    'UPDATE webhook_subscriptions SET removed_at = now() WHERE id = $1',
    "DELETE FROM webhook_messages WHERE subscription_id = $1 AND state = 'pending'",
  ];
  for (const [what, lockingMessages] of [
    ['a settlement', (store: PostgresStore, id: number, [claimed]: ClaimedMessage[]) =>
      store.webhooks.settleMessages('a', [{ messageId: claimed!.id, subscriptionId: id, attempt: claimed!.attempt, outcome: 'delivered', answer: 'HTTP 204' }])],
    ['a resend of a pending message', (store: PostgresStore, id: number, [, pending]: ClaimedMessage[]) =>
      store.webhooks.resendMessages({ subscriptionId: id, messageId: pending!.id })],
  ] as const) {
    test(`postgres: ${what} locks the subscription before its messages, as a removal does, so the two never deadlock`, async (t) => {
      const { url, store, id } = await storeWithASubscription(t);
      await store.createPlants([{ id: 1n, name: 'a' }, { id: 2n, name: 'b' }]);
      const claimed = await store.webhooks.claimMessages({ subscriptionId: id, owner: 'a', limit: 2, leaseMs: 60_000 });
      const [removal, watcher] = [new pg.Client(url), new pg.Client(url)];
      await Promise.all([removal.connect(), watcher.connect()]);
      try {
        await removal.query('BEGIN');
        await removal.query(removalSteps[0]!, [id]);
        let done = false;
        const operation = lockingMessages(store, id, claimed).then(() => (done = true));
        const waitsOnALock = async () =>
          (await watcher.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount! > 0;
        await until(`${what} waits on the removal`, async () => done || (await waitsOnALock()));
        // Had it locked a message before the subscription, this step would wait on it: a deadlock.
        await within("the removal's second step", removal.query(removalSteps[1]!, [id]), 5_000);
        await removal.query('COMMIT');
        await within(what, operation, 5_000);
      } finally {
        await Promise.all([removal.end(), watcher.end()]);
      }
      assert.deepEqual(await store.webhooks.listMessages({ subscriptionId: id, limit: 10 }), [], 'the removal dropped every pending message');
    });
  }

  test('postgres: a claim takes nothing for a removed subscription, not even a message written after the removal', async (t) => {
    const { url, store, id } = await storeWithASubscription(t);
    await store.createPlants([{ id: 1n, name: 'a' }]);
    assert.equal(await store.webhooks.removeSubscription(id), true);
    // As a plant batch that began before the removal writes its message (the outbox has no foreign keys).
    const client = new pg.Client(url);
    await client.connect();
    await client.query('INSERT INTO webhook_messages (subscription_id, plant_id, created_at, next_attempt_at) VALUES ($1, 1, now(), now())', [id]).finally(() => client.end());
    assert.deepEqual(await store.webhooks.claimMessages({ subscriptionId: id, owner: 'a', limit: 10, leaseMs: 60_000 }), []);
    assert.equal(await store.webhooks.pruneMessages(new Date(0)), 1, 'and the next prune drops it');
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

  test('postgres: the batch, the subscriptions read, the claim and the settlement are parsed once a connection, as named statements', async (t) => {
    const direct = new URL(await freshPostgresDatabase(t));
    const parses: ParsedStatement[] = [];
    const proxy = await TcpProxy.start(t, { host: direct.hostname, port: Number(direct.port || 5432) }, () => readParses(parses));
    const throughProxy = new URL(direct);
    throughProxy.port = String(proxy.port);
    const store = await PostgresStore.open(throughProxy.toString(), { poolSize: 1 });
    try {
      const added = await addSubscription(store.webhooks, 'http://127.0.0.1:9/hooks', 'subscribed');
      assert.ok(added.added);
      const subscriptionId = added.subscription.id;
      for (let id = 1n; id <= 5n; id++) {
        assert.deepEqual(await store.createPlants([{ id, name: `plant ${id}` }]), [{ outcome: 'created' }]);
        assert.deepEqual((await store.webhooks.activeSubscriptions()).map((subscription) => subscription.id), [subscriptionId]);
        const [claimed] = await store.webhooks.claimMessages({ subscriptionId, owner: 'a', limit: 1, leaseMs: 60_000 });
        assert.equal(claimed?.plant.id, id);
        await store.webhooks.settleMessages('a', [{ messageId: claimed!.id, subscriptionId, attempt: claimed!.attempt, outcome: 'delivered', answer: 'HTTP 204' }]);
      }
      assert.equal(await store.countPlants(), 5n);
      assert.equal((await store.webhooks.listSubscriptions())[0]!.delivered, 5);
      assert.equal(store.preparedStatements, true);
    } finally {
      await store.close();
    }
    const named = [INSERT_PLANTS_STATEMENT, ACTIVE_SUBSCRIPTIONS_STATEMENT, CLAIM_STATEMENT, SETTLE_STATEMENT];
    for (const statement of named) {
      assert.match(statement.name, /^plantstore_[a-z_]+_[0-9a-f]{16}$/);
      assert.deepEqual(
        parses.filter(({ text }) => text === statement.text).map(({ name }) => name),
        [statement.name],
        `${statement.name}: five calls on one connection, parsed once, named`,
      );
    }
  });

  const pgBouncerSkip = await fleetSkipReason();
  test(
    'postgres through PgBouncer in transaction mode: batches go unnamed once the connections lose their statement, and every plant is stored once',
    { skip: pgBouncerSkip ?? false },
    async (t) => {
      const url = await freshPooledDatabase(t);
      const stores = await Promise.all([1, 2].map(() => PostgresStore.open(url, { poolSize: 3 })));
      t.after(() => Promise.all(stores.map((store) => store.close())));
      let next = 0n;
      const createSome = () =>
        Promise.all(
          stores.flatMap((store) =>
            [1, 2, 3].map(async () => {
              const id = ++next;
              assert.deepEqual(await store.createPlants([{ id, name: `plant ${id}` }]), [{ outcome: 'created' }]);
            }),
          ),
        );
      // PgBouncer lends each transaction whichever server connection is free, so a statement
      // prepared through one client connection is soon missing, or already there, on another.
      for (let round = 0; round < 50 && stores.every((store) => store.preparedStatements); round++) await createSome();
      assert.ok(
        stores.some((store) => !store.preparedStatements),
        'in 50 rounds of concurrent creates, no batch met a server connection without its statement',
      );
      await createSome();
      assert.equal(await stores[0]!.countPlants(), next);
      assert.deepEqual(await stores[1]!.createPlants([{ id: 1n, name: 'plant 1' }]), [{ outcome: 'replayed' }]);
    },
  );
}

/** A store on a new database, with one subscription. */
async function storeWithASubscription(t: TestContext): Promise<{ url: string; store: PostgresStore; id: number }> {
  const url = await freshPostgresDatabase(t);
  const store = await PostgresStore.open(url, { poolSize: 2 });
  t.after(() => store.close());
  const added = await addSubscription(store.webhooks, 'http://127.0.0.1:9/hooks', 'subscribed');
  assert.ok(added.added);
  return { url, store, id: added.subscription.id };
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Rows': number;
  'Rows Removed by Join Filter'?: number;
  Plans?: PlanNode[];
}

/**
 * Prepares `text` as `name` on a connection of its own and runs `check` under
 * each plan_cache_mode: the store sends the statement named, so PostgreSQL
 * plans it for its values five times, then keeps a generic plan.
 */
async function underBothPlanModes(url: string, name: string, text: string, check: (client: pg.Client, mode: string) => Promise<void>): Promise<void> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    await client.query(`PREPARE ${name} AS ${text}`);
    for (const mode of ['force_custom_plan', 'force_generic_plan']) await check(client, mode);
  } finally {
    await client.end();
  }
}

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/** EXPLAINs the prepared `claim` under plan_cache_mode `mode` and asserts that it reads only the 32 due messages it takes. */
async function assertReadsOnlyWhatItTakes(client: pg.Client, id: number, mode: string): Promise<void> {
  // EXPLAIN ANALYZE runs the claim: rolled back, it claims nothing.
  await client.query('BEGIN');
  await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim (${id}, 'explain', 32, 60000)`,
  );
  await client.query('ROLLBACK');
  const plan = rows[0]!['QUERY PLAN'][0].Plan;
  const nodes = planNodes(plan);
  // A sort of the due messages would read all 4,000 to take 32; what the claim sorts, it has already taken.
  const sorted = nodes.filter((node) => /Sort/.test(node['Node Type'])).flatMap((node) => node.Plans ?? []);
  const mostSorted = Math.max(0, ...sorted.map((node) => node['Actual Rows']));
  assert.ok(mostSorted <= 32, `${mode}: the claim sorted ${mostSorted} rows to take 32`);
  const due = nodes.find((node) => node['Index Name'] === 'webhook_messages_due');
  assert.ok(due !== undefined, `${mode}: the claim reads the due index`);
  // A generic plan looks for the subscription named by the parameter, a custom one for its value.
  assert.equal(due['Index Cond']?.includes('subscription_id = $1'), mode === 'force_generic_plan', `${mode}: ${due['Index Cond']}`);
  assert.ok(due['Actual Rows'] <= 33, `${mode}: the claim read ${due['Actual Rows']} due messages of 4,000 to take 32`);
}

function delivered(subscriptionId: number, message: ClaimedMessage): Settlement {
  return { messageId: message.id, subscriptionId, attempt: message.attempt, outcome: 'delivered', answer: 'HTTP 204' };
}

/**
 * EXPLAINs the prepared `settle` of the `claimed` messages, delivered, under
 * plan_cache_mode `mode`, and asserts that it finds each by its key: neither
 * reading the due index (which holds the entries of every message delivered
 * before, until a vacuum) nor comparing every outcome with every message.
 */
async function assertSettlesOnlyItsOwn(client: pg.Client, id: number, claimed: readonly ClaimedMessage[], mode: string): Promise<void> {
  const count = claimed.length;
  // EXECUTE takes no bound parameters: the store's own values go as literals.
  const values = settlementValues('explain', claimed.map((message) => delivered(id, message)));
  await client.query('BEGIN');
  await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE settle (${values.map((value) => sqlLiteral(client, value)).join(', ')})`,
  );
  await client.query('ROLLBACK');
  const nodes = planNodes(rows[0]!['QUERY PLAN'][0].Plan);
  const update = nodes.find((node) => node['Node Type'] === 'ModifyTable' && node['Relation Name'] === 'webhook_messages');
  assert.equal(update?.['Actual Rows'], count, `${mode}: the settlement settles every message claimed`);
  const read = planNodes(update!);
  const due = read.filter((node) => node['Index Name'] === 'webhook_messages_due');
  assert.deepEqual(due, [], `${mode}: the settlement reads the due index`);
  const compared = Math.max(0, ...read.map((node) => node['Rows Removed by Join Filter'] ?? 0));
  assert.ok(compared < count, `${mode}: a join compared ${compared} outcomes with messages they were not`);
}

/** A statement parameter as an SQL literal: an array in PostgreSQL's text form, whose elements are quoted (NULL bare). */
function sqlLiteral(client: pg.Client, value: unknown): string {
  if (value === null) return 'NULL';
  if (!Array.isArray(value)) return client.escapeLiteral(String(value));
  const element = (item: unknown) => (item === null ? 'NULL' : `"${String(item).replace(/["\\]/g, '\\$&')}"`);
  return client.escapeLiteral(`{${value.map(element).join(',')}}`);
}
