import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type TestContext, test } from 'node:test';
import { ServiceError } from '../../src/errors.js';
import { GroupCommit } from '../../src/plants/group-commit.js';
import type { NewPlant } from '../../src/plants/plant.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { CreatePlantResult, Store } from '../../src/store/store.js';
import { gatedStore } from '../helpers/gated-store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { within } from '../helpers/until.js';

/** One plant through the group commit, as a promise of its outcome. */
function commit(writer: GroupCommit, plant: NewPlant): Promise<CreatePlantResult> {
  return new Promise((resolve, reject) => writer.add(plant, (error, result) => (error === undefined ? resolve(result!) : reject(error))));
}

function setUp(t: TestContext, options: { maxBatch?: number; maxQueue?: number } = {}) {
  const real = SqliteStore.open(join(tempDir(t), 'p.db'));
  t.after(() => real.close());
  const store = gatedStore(real);
  const writer = new GroupCommit(store, { maxBatch: options.maxBatch ?? 512, maxQueue: options.maxQueue ?? 4096, concurrency: 1 });
  return { real, store, writer };
}

test('creates that arrive while a commit is in flight share the next one, and each waits for its own', async (t) => {
  const { real, store, writer } = setUp(t);
  store.hold();
  const first = commit(writer, { id: 1n, name: 'first' });
  await nextTurn();
  const settled = new Set<number>();
  const later = [2n, 3n, 4n, 5n].map((id) => commit(writer, { id, name: `later ${id}` }).then((result) => (settled.add(Number(id)), result)));
  await nextTurn();
  assert.deepEqual(store.batches, [1], 'the later creates wait for the commit in flight');
  assert.equal(settled.size, 0);
  assert.equal(await real.countPlants(), 0n, 'nothing is answered before its commit');

  store.release();
  assert.deepEqual(await first, { outcome: 'created' });
  assert.deepEqual(await Promise.all(later), Array(4).fill({ outcome: 'created' }));
  assert.deepEqual(store.batches, [1, 4], 'one commit for all four');
  assert.equal(writer.commits, 2);
});

test('a lone create commits at once, alone', async (t) => {
  const { store, writer } = setUp(t);
  for (let id = 1n; id <= 5n; id++) assert.deepEqual(await commit(writer, { id, name: 'alone' }), { outcome: 'created' });
  assert.deepEqual(store.batches, [1, 1, 1, 1, 1]);
  assert.equal(writer.commits, 5);
});

test('batches are bounded by maxBatch', async (t) => {
  const { store, writer } = setUp(t, { maxBatch: 3 });
  await Promise.all(Array.from({ length: 8 }, (_, i) => commit(writer, { id: BigInt(i), name: 'x' })));
  assert.deepEqual(store.batches, [3, 3, 2]);
});

test('a full queue refuses with OVERLOADED and stores nothing of the refused create', async (t) => {
  const { real, store, writer } = setUp(t, { maxQueue: 2 });
  store.hold();
  const inFlight = commit(writer, { id: 1n, name: 'in flight' });
  await nextTurn();
  const queued = [commit(writer, { id: 2n, name: 'queued' }), commit(writer, { id: 3n, name: 'queued' })];
  await assert.rejects(commit(writer, { id: 4n, name: 'refused' }), (error: unknown) => {
    assert.ok(error instanceof ServiceError);
    assert.equal(error.code, 'OVERLOADED');
    assert.equal(error.status, 503);
    assert.deepEqual(error.headers, { 'retry-after': '1' });
    return true;
  });
  store.release();
  await Promise.all([inFlight, ...queued]);
  assert.deepEqual((await real.listPlants({ limit: 10 })).map((plant) => plant.id), [1n, 2n, 3n]);
});

/**
 * `real`, except that its first plant write goes to a closed store and fails
 * as a real store fails; `batches` holds the size of every write.
 */
async function failingFirstWrite(t: TestContext, real: Store): Promise<Store & { batches: number[] }> {
  const closed = SqliteStore.open(join(tempDir(t), 'closed.db'));
  await closed.close();
  const batches: number[] = [];
  const createPlants = (plants: readonly NewPlant[]) => {
    batches.push(plants.length);
    return (batches.length === 1 ? closed : real).createPlants(plants);
  };
  return new Proxy(real, {
    get(target, key) {
      if (key === 'batches') return batches;
      if (key === 'createPlants') return createPlants;
      const value = target[key as keyof Store];
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Store & { batches: number[] };
}

test('a failed commit fails every create of its batch, and the next batch goes on', async (t) => {
  const { real } = setUp(t);
  const store = await failingFirstWrite(t, real);
  const writer = new GroupCommit(store, { maxBatch: 512, maxQueue: 4096, concurrency: 1 });
  const doomed = [commit(writer, { id: 1n, name: 'a' }), commit(writer, { id: 2n, name: 'b' })];
  const results = await Promise.allSettled(doomed);
  assert.deepEqual(results.map((result) => result.status), ['rejected', 'rejected']);
  for (const result of results) {
    assert.ok(result.status === 'rejected' && result.reason instanceof ServiceError && result.reason.code === 'STORE_UNAVAILABLE');
  }

  assert.deepEqual(await commit(writer, { id: 3n, name: 'c' }), { outcome: 'created' });
  assert.deepEqual(store.batches, [2, 1], 'the failed batch held both creates; the next one committed');
  assert.equal(writer.commits, 2);
  assert.deepEqual((await real.listPlants({ limit: 10 })).map((plant) => plant.id), [3n], 'nothing of the failed batch is stored');
});

/**
 * Takes the next uncaught exception in place of the test runner, which would
 * fail the test with it; the runner's own listeners are put back after it
 * (or after the test). Resolves the exception.
 */
function nextUncaught(t: TestContext): Promise<unknown> {
  const runners = process.listeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  const restore = () => {
    process.removeAllListeners('uncaughtException');
    for (const listener of runners) process.on('uncaughtException', listener);
  };
  t.after(restore);
  return new Promise((resolve) =>
    process.once('uncaughtException', (error) => {
      restore();
      resolve(error);
    }),
  );
}

test('an answer that throws (a defect) does not keep the rest of its batch from theirs, and still surfaces as an uncaught exception', async (t) => {
  const { real, store, writer } = setUp(t);
  const uncaught = nextUncaught(t);
  const answered: string[] = [];
  const defect = new Error('a defect in the answer of plant 2');
  writer.add({ id: 1n, name: 'one' }, (error, result) => answered.push(`1 ${error ?? result?.outcome}`));
  writer.add({ id: 2n, name: 'two' }, () => {
    throw defect;
  });
  writer.add({ id: 3n, name: 'three' }, (error, result) => answered.push(`3 ${error ?? result?.outcome}`));

  assert.equal(await within('the defect surfaces', uncaught, 10_000), defect);
  assert.deepEqual(answered, ['1 created', '3 created'], 'the answers after the one that threw were given');
  assert.deepEqual(store.batches, [3], 'one commit for the three');
  assert.equal(await real.countPlants(), 3n);
  await within('the writer drains', writer.drain(), 10_000);
});
