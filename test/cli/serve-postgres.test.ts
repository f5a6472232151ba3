import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { createToken, postPlant, runCli, startServer } from '../helpers/processes.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';

if (!(await postgresReachable())) {
  test('several instances on PostgreSQL', { skip: POSTGRES_SKIP_REASON }, () => undefined);
} else {
  test('two instances on one database: one id is created once, a revoked token is refused by both', async (t) => {
    const env = { DATABASE_URL: await freshPostgresDatabase(t) };
    const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)]);
    const token = await createToken(env, 'shared');

    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => postPlant((i % 2 === 0 ? a : b)!.url, token, `{"id":9007199254740993,"name":"n${i % 4}"}`)),
    );
    const exported = (await runCli(['plants', 'export'], env)).stdout.trimEnd().split('\n');
    assert.equal(exported.length, 1);
    const winner = /"name":"(n\d)"/.exec(exported[0]!)![1];
    responses.forEach((response, i) => assert.equal(response.status, `n${i % 4}` === winner ? 200 : 409, `request ${i}`));

    assert.equal((await runCli(['token', 'revoke', 'shared'], env)).code, 0);
    for (const server of [a!, b!]) {
      await until('the instance refuses the revoked token', async () => (await postPlant(server.url, token, '{"id":1,"name":"late"}')).status === 401);
    }
  });

  test('the database going away: 503 with Retry-After, not ready, still alive, and back by itself', async (t) => {
    const database = new URL(await freshPostgresDatabase(t));
    const proxy = await TcpProxy.start(t, { host: database.hostname, port: Number(database.port || 5432) });
    const throughProxy = new URL(database);
    throughProxy.port = String(proxy.port);
    const env = { DATABASE_URL: throughProxy.toString() };
    const token = await createToken({ DATABASE_URL: database.toString() }, 'ci');
    const server = await startServer(t, env);

    assert.equal((await postPlant(server.url, token, '{"id":1,"name":"before"}')).status, 200);
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);

    await proxy.cut();
    const during = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"id":2,"name":"during"}',
    });
    assert.equal(during.status, 503);
    assert.equal(during.headers.get('retry-after'), '1');
    assert.deepEqual(await during.json(), { error: 503, message: 'The store cannot take writes right now; retry later', code: 'STORE_UNAVAILABLE' });
    const notReady = await fetch(`${server.url}/readyz`);
    assert.equal(notReady.status, 503);
    assert.equal((await notReady.json() as { error: number }).error, 503);
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);

    await proxy.restore();
    await until('a retry succeeds once the database is back', async () => (await postPlant(server.url, token, '{"id":2,"name":"during"}')).status === 200);
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
    assert.equal(server.child.exitCode, null, 'the server never stopped');
    const exported = await runCli(['plants', 'export'], { DATABASE_URL: database.toString() });
    assert.equal(exported.stdout, '{"id":1,"name":"before"}\n{"id":2,"name":"during"}\n');
  });
}
