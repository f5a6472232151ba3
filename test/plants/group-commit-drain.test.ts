import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { NewPlant } from '../../src/plants/plant.js';
import type { CreatePlantResult, Store } from '../../src/store/store.js';
import { postgres, testBackends } from '../helpers/backends.js';
import { postgresReachable, POSTGRES_SKIP_REASON } from '../helpers/postgres.js';
import { createRequest } from '../helpers/http-answers.js';
import { rawConnection, rawExchange } from '../helpers/raw-http.js';
import { storeWith } from '../helpers/store-with.js';
import { testApp } from '../helpers/test-app.js';
import { until } from '../helpers/until.js';

interface HeldBatch {
  ids: bigint[];
  release(): void;
  /** Set once the real store committed the batch. */
  committed: boolean;
}

/**
 * A real store whose every plant write is held at a gate of its own until
 * the test releases it, so that the test sees which transactions are in
 * flight at once. `inFlight` counts the writes started and not yet
 * committed; `mostInFlight` the most there ever were at once. Every gate
 * opens when the test ends, so that a failed test still closes its app.
 */
function heldBatches(t: TestContext, store: Store): Store & { batches: HeldBatch[]; inFlight: number; mostInFlight: number } {
  const batches: HeldBatch[] = [];
  let ended = false;
  t.after(() => {
    ended = true;
    for (const batch of batches) batch.release();
  });
  const held = {
    batches,
    inFlight: 0,
    mostInFlight: 0,
    async createPlants(plants: readonly NewPlant[]): Promise<CreatePlantResult[]> {
      held.inFlight += 1;
      held.mostInFlight = Math.max(held.mostInFlight, held.inFlight);
      const { promise: gate, resolve: release } = Promise.withResolvers<void>();
      const batch: HeldBatch = { ids: plants.map((plant) => plant.id), release, committed: false };
      batches.push(batch);
      if (ended) release();
      await gate;
      try {
        return await store.createPlants(plants);
      } finally {
        batch.committed = true;
        held.inFlight -= 1;
      }
    },
  };
  return storeWith(store, held);
}

if (!(await postgresReachable())) {
  test('group commit with several transactions in flight', { skip: POSTGRES_SKIP_REASON }, () => undefined);
} else {
  test('postgres: with several transactions in flight, creates start one each up to the limit, the rest wait for one to commit, and each is answered after its own', async (t) => {
    let store: ReturnType<typeof heldBatches> | undefined;
    // A pool of 4 connections: 3 for plant writes, one left for token lookups and readiness.
    const { app, token } = await testApp(t, { backend: postgres, wrapStore: (real) => (store = heldBatches(t, real)) });
    assert.equal(store!.writeConcurrency, 3);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const answered = new Map<number, number>();
    // A connection each, closed after its answer, so that closing the app never waits for a client.
    const create = (id: number) =>
      rawExchange(port, createRequest(token, `{"id":${id},"name":"p${id}"}`, { headers: { Connection: 'close' } })).then(
        (answer) => answered.set(id, Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1])),
        () => answered.set(id, Number.NaN),
      );

    // One at a time, so that each finds a free writer: three transactions in flight at once.
    const requests = [];
    for (const id of [1, 2, 3]) {
      requests.push(create(id));
      await until(`create ${id} is in a transaction`, () => store!.batches.length === id);
    }
    assert.equal(store!.inFlight, 3);
    for (const id of [4, 5, 6, 7, 8]) requests.push(create(id));
    await until('the other five wait for a writer', () => app.groupCommit.waiting === 5);
    assert.equal(store!.batches.length, 3, 'no fourth transaction while three are in flight');

    store!.batches[1]!.release();
    await until('the create of the released transaction is answered', () => answered.get(2) === 200);
    await until('the five waiting go into the freed writer, in one transaction', () => store!.batches.length === 4);
    assert.deepEqual(store!.batches[3]!.ids, [4n, 5n, 6n, 7n, 8n]);
    assert.deepEqual([...answered.keys()], [2], 'the creates of transactions still held are not answered');

    for (const batch of store!.batches) batch.release();
    await Promise.all(requests);
    assert.deepEqual([...answered.values()], Array(8).fill(200));
    assert.equal(store!.mostInFlight, 3);
    assert.equal(await store!.countPlants(), 8n);
  });
}

for (const backend of await testBackends('closing the app commits what it accepted')) {
  test(`${backend.name}: closing the app commits the creates it accepted, even those whose clients went away, before it resolves`, async (t) => {
    let store: ReturnType<typeof heldBatches> | undefined;
    const { app, token } = await testApp(t, { backend, wrapStore: (real) => (store = heldBatches(t, real)) });
    let closeReachedTheWriter = false;
    let closed = false;
    // onClose hooks run last-registered first: this one runs just before the app's own, which drains the writer.
    app.addHook('onClose', (_instance, done) => {
      closeReachedTheWriter = true;
      done();
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };

    // Two creates the writer holds (committing, or waiting for a writer), whose clients then hang up.
    for (const id of [1, 2]) {
      const client = rawConnection(port);
      client.socket.write(createRequest(token, `{"id":${id},"name":"client gone"}`));
      await until(`create ${id} is held by the writer`, () => store!.batches.flatMap((batch) => batch.ids).length + app.groupCommit.waiting === id);
      client.socket.destroy();
      await client.closed;
    }

    const closing = app.close().then(() => (closed = true));
    await until('close has stopped the server and reached the writer', () => closeReachedTheWriter);
    assert.equal(closed, false, 'close waits while a create is held');

    for (let released = 0; released < 2; released++) {
      await until('a transaction to release', () => store!.batches.length > released);
      store!.batches[released]!.release();
    }
    await closing;
    assert.ok(store!.batches.every((batch) => batch.committed), 'every transaction committed before close resolved');
    assert.equal(app.groupCommit.waiting, 0);
    assert.deepEqual((await store!.listPlants({ limit: 10 })).map((plant) => plant.id), [1n, 2n]);
  });
}
