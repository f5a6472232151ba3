// Runs alone: it gives a frozen host 500 ms to answer, which a loaded machine can take by itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { ServiceError } from '../../src/errors.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';

/** A port on loopback where nothing listens: a host that is down. */
const DOWN = '127.0.0.1:1';

/** `url` with `before` put in front of its host, as a libpq multi-host list. */
function withHostsBefore(url: string, before: string): string {
  const parsed = new URL(url);
  return url.replace(`@${parsed.host}/`, `@${before},${parsed.host}/`);
}

if (!(await postgresReachable())) {
  test('PostgreSQL hosts', { skip: POSTGRES_SKIP_REASON }, () => undefined);
} else {
  test('postgres: a multi-host URL connects to the first host that answers, in order', async (t) => {
    const url = withHostsBefore(await freshPostgresDatabase(t), DOWN);
    for (const attrs of ['any', 'read-write', 'primary']) {
      const store = await PostgresStore.open(`${url}?target_session_attrs=${attrs}`, { poolSize: 2 });
      t.after(() => store.close());
      const [result] = await store.createPlants([{ id: BigInt(attrs.length), name: attrs }]);
      assert.ok(result?.outcome === 'created' || result?.outcome === 'replayed', attrs);
    }
  });

  test('postgres: with no host answering, the store is unavailable (503) within the connect timeouts, not hung', async (t) => {
    const started = performance.now();
    await assert.rejects(
      PostgresStore.open(`postgres://postgres@${DOWN},127.0.0.1:2/plants?target_session_attrs=read-write`, { poolSize: 1, connectTimeoutMs: 500 }),
      (error: unknown) => error instanceof ServiceError && error.code === 'STORE_UNAVAILABLE' && /127\.0\.0\.1:1 did not answer.*127\.0\.0\.1:2 did not answer/.test(String((error.cause as Error).message)),
    );
    assert.ok(performance.now() - started < 5000);
    t.diagnostic(`refused in ${Math.round(performance.now() - started)} ms`);
  });

  test('postgres: a server that stops answering without closing is given up after the query timeout, and the next host taken', async (t) => {
    const direct = new URL(await freshPostgresDatabase(t));
    const frozen = await TcpProxy.start(t, { host: direct.hostname, port: Number(direct.port) });
    const url = `postgres://postgres@127.0.0.1:${frozen.port},${direct.host}${direct.pathname}?target_session_attrs=read-write`;
    const store = await PostgresStore.open(url, { poolSize: 2, connectTimeoutMs: 500, queryTimeoutMs: 500 });
    t.after(() => store.close());
    assert.equal((await store.createPlants([{ id: 1n, name: 'through the first host' }]))[0]?.outcome, 'created');
    frozen.freeze();
    const started = performance.now();
    await assert.rejects(store.createPlants([{ id: 2n, name: 'lost with the frozen host' }]), (error: unknown) => error instanceof ServiceError && error.code === 'STORE_UNAVAILABLE');
    assert.ok(performance.now() - started < 3000, 'the statement is given up at its timeout');
    // The first host still takes connections but answers nothing: the search moves on to the second.
    assert.equal((await store.createPlants([{ id: 2n, name: 'lost with the frozen host' }]))[0]?.outcome, 'created');
  });

  test('postgres: every command takes a multi-host URL, and shows every host without the password', async (t) => {
    const single = new URL(await freshPostgresDatabase(t));
    single.password = 'not-needed-with-trust';
    const url = `${withHostsBefore(single.toString(), DOWN)}?target_session_attrs=read-write`;
    const shown = url.replace('not-needed-with-trust', '*****');
    const env = { DATABASE_URL: url };
    const config = await runInProcess(['config'], env);
    assert.match(config.stdout, new RegExp(`^DATABASE_URL=${shown.replace(/[.*?+^$()[\]{}|\\]/g, '\\$&')}$`, 'm'));
    const token = await createToken(env, 'hosts');
    const server = await startServer(t, env);
    const started = server.logs.find((line) => line['msg'] === 'plantstore serving') as { config: Record<string, string> };
    assert.equal(started.config['DATABASE_URL'], shown);
    assert.equal((await postPlant(server.url, token, '{"id":9007199254740993,"name":"through the list"}')).status, 200);
    const exported = await runInProcess(['plants', 'export'], env);
    assert.equal(exported.stdout, '{"id":9007199254740993,"name":"through the list"}\n');
    for (const output of [config.stdout, config.stderr, exported.stderr, JSON.stringify(server.logs)]) assert.doesNotMatch(output, /not-needed-with-trust/);
  });

  test('postgres: a server that turns read-only (25006, an old primary back as a standby) is left, with 503 until a primary answers', async (t) => {
    const database = new URL(await freshPostgresDatabase(t));
    const name = database.pathname.slice(1);
    // Two names of the one server: a list of two hosts, both of which turn read-only together.
    const url = `postgres://postgres@${database.host},localhost:${database.port}/${name}?target_session_attrs=read-write`;
    const store = await PostgresStore.open(url, { poolSize: 2 });
    t.after(() => store.close());
    assert.equal((await store.createPlants([{ id: 1n, name: 'while writable' }]))[0]?.outcome, 'created');

    const admin = new pg.Client({ connectionString: database.toString() });
    // The test's database is dropped with FORCE after the test, which ends this connection too.
    admin.on('error', () => undefined);
    await admin.connect();
    t.after(() => admin.end());
    await admin.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    // The store's idle connections end (the pool forgets them without a failed statement); the next it opens is read-only.
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    // The server ends a backend after it wrote the end to its socket: once none is left, the
    // pool has read every end, before the answer of the query that saw none.
    await until('the store holds no connection', async () => {
      const { rows } = await admin.query<{ count: string }>('SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
      return rows[0]!.count === '0';
    });
    // The ends may have come in the same poll as that answer, whose code runs first: one turn of
    // the loop lets the pool read them all. A write on a connection whose end it has not read fails
    // with that end (57P01) and sends the pool searching, where a read-only server is refused
    // before any write: no 25006 would ever come.
    await new Promise((resolve) => setImmediate(resolve));
    // Every failure must be a 503, and one must be the read-only refusal.
    await until('a write is refused as read-only (25006)', async () => {
      const refused = await store.createPlants([{ id: 2n, name: 'while read-only' }]).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(refused instanceof ServiceError && refused.code === 'STORE_UNAVAILABLE', String(refused));
      return (refused.cause as { code?: string }).code === '25006';
    });
    await until('the search finds no primary while both names are read-only', async () => {
      const error = await store.createPlants([{ id: 2n, name: 'while read-only' }]).then(() => undefined, (thrown: unknown) => thrown);
      return error instanceof ServiceError && /is read-only.*is read-only/.test(String((error.cause as Error | undefined)?.message));
    });

    await admin.query(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
    await until('a create succeeds once the server takes writes again', async () => {
      const outcome = await store.createPlants([{ id: 2n, name: 'while read-only' }]).then((results) => results[0]?.outcome, () => undefined);
      return outcome === 'created';
    });
  });
}
