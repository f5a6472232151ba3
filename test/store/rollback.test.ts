import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { errorCatalogue, ServiceError } from '../../src/errors.js';
import { openStore } from '../../src/store/open-store.js';
import Database from 'better-sqlite3';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { createToken, postPlant, runInProcess, type ServerProcess, startServer } from '../helpers/processes.js';
import { type Answer, createRequest, splitAnswers } from '../helpers/http-answers.js';
import { type RawConnection, rawConnection } from '../helpers/raw-http.js';
import { within } from '../helpers/until.js';

const REFUSAL = 'the test trigger refuses this plant';

/**
 * Makes the store's own database refuse a plant named "poison", but only
 * once two plants named "doomed ..." are written: the failure then comes
 * part-way through a batch, after earlier rows of it were inserted in the
 * same transaction (had they not been, the poison would be stored).
 */
async function refusePoisonLate(databaseUrl: string): Promise<void> {
  const database = parseDatabaseUrl(databaseUrl, 'test');
  if (database.kind === 'sqlite') {
    const db = new Database(database.path);
    db.exec(`CREATE TRIGGER refuse_poison BEFORE INSERT ON plants
             WHEN NEW.name = 'poison' AND (SELECT count(*) FROM plants WHERE name LIKE 'doomed %') >= 2
             BEGIN SELECT RAISE(ABORT, '${REFUSAL}'); END`);
    db.close();
    return;
  }
  const client = new pg.Client(database.url);
  await client.connect();
  try {
    await client.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.name = 'poison' AND (SELECT count(*) FROM plants WHERE name LIKE 'doomed %') >= 2 THEN
          RAISE EXCEPTION '${REFUSAL}';
        END IF;
        RETURN NEW;
      END $$`);
    await client.query('CREATE TRIGGER refuse_poison BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION refuse_poison()');
  } finally {
    await client.end();
  }
}

/**
 * POSTs the plants on one connection, pipelined, written while the server is
 * stopped (SIGSTOP): once it runs again it finds every request in its socket
 * and reads them in one turn of its event loop, so they wait for the same
 * commit however the bytes travelled. Each request carries its plant's name
 * as X-Request-Id, a dash for the space.
 */
async function pipelinedCreates(server: ServerProcess, token: string, plants: { id: number; name: string }[]): Promise<Answer[]> {
  const requests = plants.map((plant, i) =>
    createRequest(token, JSON.stringify(plant), {
      headers: { 'X-Request-Id': plant.name.replace(' ', '-'), ...(i === plants.length - 1 ? { Connection: 'close' } : {}) },
    }),
  );
  const { hostname, port } = new URL(server.url);
  const pid = server.child.pid!;
  process.kill(pid, 'SIGSTOP');
  let connection: RawConnection;
  try {
    // The kernel takes the connection and the bytes while the server is stopped.
    connection = rawConnection(Number(port), hostname);
    const written = new Promise<void>((resolve, reject) => connection.socket.write(requests.join(''), (error) => (error ? reject(error) : resolve())));
    await within('the requests are handed to the kernel', written, 10_000);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  await connection.closed;
  const answers = splitAnswers(connection.received());
  assert.equal(answers.length, plants.length, 'one answer per request');
  return answers;
}

/** The commits and the plants they wrote so far, from the server's metrics. */
async function commitCounts(url: string): Promise<{ commits: number; plants: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sample = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { commits: sample('plantstore_store_commit_batch_size_count'), plants: sample('plantstore_store_commit_batch_size_sum') };
}

for (const backend of await testBackends('a batch that fails part-way')) {
  test(`${backend.name}: a batch whose transaction fails on a later row stores nothing of it, and the store goes on`, async (t) => {
    const databaseUrl = await existingStoreUrl(t, backend);
    const store = await openStore({ database: parseDatabaseUrl(databaseUrl, 'test'), databasePoolSize: 2 });
    t.after(() => store.close());
    assert.deepEqual(await store.createPlants([{ id: 1n, name: 'kept' }]), [{ outcome: 'created' }]);
    await refusePoisonLate(databaseUrl);

    const batch = [
      { id: 2n, name: 'doomed 2' },
      { id: 1n, name: 'kept' },
      { id: 3n, name: 'doomed 3' },
      { id: 4n, name: 'poison' },
      { id: 5n, name: 'doomed 5' },
    ];
    await assert.rejects(store.createPlants(batch), (error: unknown) => {
      assert.ok(error instanceof Error && error.message.includes(REFUSAL), String(error));
      assert.ok(!(error instanceof ServiceError), 'not a store that cannot be reached: a failure the service does not know');
      return true;
    });
    assert.deepEqual(await store.listPlants({ limit: 10 }), [{ id: 1n, name: 'kept' }], 'nothing of the batch is stored');

    assert.deepEqual(await store.createPlants(batch.filter((plant) => plant.name !== 'poison')), [
      { outcome: 'created' },
      { outcome: 'replayed' },
      { outcome: 'created' },
      { outcome: 'created' },
    ]);
    assert.equal(await store.countPlants(), 4n);
  });

  test(`${backend.name}: every request of a batch that fails part-way gets the generic 500, its detail only in the log under its request id, and nothing of it is stored`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), TOKEN_CACHE_TTL_MS: '1000' };
    const token = await createToken(env, 'rollback');
    await refusePoisonLate(env.DATABASE_URL);
    const server = await startServer(t, env);
    // The token is then remembered, so that no create of a batch waits for its own token lookup.
    const warmUp = async (id: number) => assert.equal((await postPlant(server.url, token, `{"id":${id},"name":"warm-up"}`)).status, 200);

    // Requests read in one turn share one commit.
    await warmUp(100);
    const before = await commitCounts(server.url);
    const calm = await pipelinedCreates(server, token, [1, 2, 3, 4, 5].map((id) => ({ id, name: `calm ${id}` })));
    assert.deepEqual(calm.map((answer) => answer.status), [200, 200, 200, 200, 200]);
    assert.deepEqual(await commitCounts(server.url), { commits: before.commits + 1, plants: before.plants + 5 }, 'one commit for the five');

    await warmUp(101);
    const doomed = [11, 12, 13].map((id) => ({ id, name: `doomed ${id}` }));
    const plants = [...doomed, { id: 14, name: 'poison' }, { id: 15, name: 'doomed 15' }];
    const answers = await pipelinedCreates(server, token, plants);
    const generic = JSON.stringify({ error: 500, message: errorCatalogue.INTERNAL.message, code: 'INTERNAL' });
    answers.forEach((answer, i) => {
      const id = plants[i]!.name.replace(' ', '-');
      assert.equal(answer.status, 500, `${id}: ${answer.body}`);
      assert.equal(answer.body, generic, `${id}: the answer tells nothing of the cause`);
      assert.equal(answer.headers['x-request-id'], id);
      assert.match(answer.headers['content-type']!, /^application\/json/);
    });
    assert.deepEqual(await commitCounts(server.url), { commits: before.commits + 2, plants: before.plants + 6 }, 'the warm-up committed, the failed batch nothing');

    assert.equal(await server.stop(), 0);
    for (const plant of plants) {
      const id = plant.name.replace(' ', '-');
      const lines = server.logs.filter((line) => line['reqId'] === id);
      const error = lines.find((line) => line['level'] === 50);
      assert.ok(error, `an error line under ${id}`);
      assert.equal(error['code'], 'INTERNAL');
      assert.equal(error['msg'], errorCatalogue.INTERNAL.message);
      assert.match(String((error['err'] as { message?: unknown } | undefined)?.message), new RegExp(REFUSAL), `${id}: the log has the detail`);
      assert.equal(lines.find((line) => line['msg'] === 'request')?.['status'], 500, `${id}: the access line`);
    }
    const exported = await runInProcess(['plants', 'export'], env);
    assert.deepEqual(
      exported.stdout.trimEnd().split('\n').map((line) => (JSON.parse(line) as { id: number }).id),
      [1, 2, 3, 4, 5, 100, 101],
      'nothing of the failed batch is stored',
    );
  });
}
