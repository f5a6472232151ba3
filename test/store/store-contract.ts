import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { NewPlant } from '../../src/plants/plant.js';
import type { CreatePlantResult, Store } from '../../src/store/store.js';

async function createOne(store: Store, plant: NewPlant): Promise<CreatePlantResult> {
  const results = await store.createPlants([plant]);
  assert.equal(results.length, 1);
  return results[0]!;
}

/**
 * The behaviour every store must have, whatever its backend. A backend's
 * test file calls this with a function that opens a fresh, empty store.
 */
export function storeContract(backend: string, openFresh: (t: TestContext) => Promise<Store>): void {
  test(`${backend}: createPlant creates, replays the same plant, and reports a conflict without changing anything`, async (t) => {
    const store = await openFresh(t);
    assert.deepEqual(await createOne(store, { id: 1n, name: 'Fern', tag: 'leafy' }), { outcome: 'created' });
    assert.deepEqual(await createOne(store, { id: 1n, name: 'Fern', tag: 'leafy' }), { outcome: 'replayed' });
    assert.deepEqual(await createOne(store, { id: 1n, name: 'Fern' }), {
      outcome: 'conflict',
      existing: { id: 1n, name: 'Fern', tag: 'leafy' },
    });
    assert.deepEqual(await createOne(store, { id: 2n, name: 'Moss' }), { outcome: 'created' });
    assert.deepEqual(await createOne(store, { id: 2n, name: 'Moss', tag: '' }), {
      outcome: 'conflict',
      existing: { id: 2n, name: 'Moss' },
    });
    assert.deepEqual(await store.listPlants({ limit: 10 }), [
      { id: 1n, name: 'Fern', tag: 'leafy' },
      { id: 2n, name: 'Moss' },
    ]);
  });

  test(`${backend}: ids keep all 64 bits and list in order, page by page`, async (t) => {
    const store = await openFresh(t);
    const ids = [-(2n ** 63n), -1n, 0n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n - 1n];
    for (const id of [...ids].reverse()) await createOne(store, { id, name: `p${id}` });
    const first = await store.listPlants({ limit: 4 });
    const rest = await store.listPlants({ after: first.at(-1)!.id, limit: 4 });
    assert.deepEqual([...first, ...rest].map((plant) => plant.id), ids);
    assert.deepEqual(await store.listPlants({ after: 2n ** 63n - 1n, limit: 4 }), []);
  });

  test(`${backend}: concurrent creates of one id never both create`, async (t) => {
    const store = await openFresh(t);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => createOne(store, { id: 7n, name: `n${i % 2}` })));
    assert.equal(results.filter((result) => result.outcome === 'created').length, 1);
  });

  test(`${backend}: tokens are stored by hash, found, listed, and revoked by id or name`, async (t) => {
    const store = await openFresh(t);
    const createdAt = new Date('2026-01-01T00:00:00.000Z');
    const expiresAt = new Date('2027-01-01T00:00:00.000Z');
    const a = await store.insertToken({ name: 'a', hash: 'h-a', createdAt, expiresAt: null });
    const b = await store.insertToken({ name: 'b', hash: 'h-b', createdAt, expiresAt });
    assert.ok(a !== 'name-taken', 'a is inserted');
    assert.ok(b !== 'name-taken', 'b is inserted');
    assert.deepEqual(a, { id: a.id, name: 'a', createdAt, expiresAt: null, revokedAt: null });
    assert.equal(await store.insertToken({ name: 'a', hash: 'h-a2', createdAt, expiresAt: null }), 'name-taken');
    assert.deepEqual(await store.findTokenByHash('h-b'), b);
    assert.equal(await store.findTokenByHash('nope'), undefined);

    const revokedAt = new Date('2026-06-01T00:00:00.000Z');
    assert.deepEqual(await store.revokeToken({ name: 'a' }, revokedAt), { ...a, revokedAt });
    assert.deepEqual(await store.revokeToken({ id: b.id }, revokedAt), { ...b, revokedAt });
    assert.equal(await store.revokeToken({ id: b.id }, revokedAt), undefined, 'a revoked token is not revoked again');
    assert.deepEqual((await store.findTokenByHash('h-a'))?.revokedAt, revokedAt);
    assert.notEqual(await store.insertToken({ name: 'a', hash: 'h-a3', createdAt, expiresAt: null }), 'name-taken');
    assert.deepEqual((await store.listTokens()).map((token) => token.name), ['a', 'b', 'a']);
  });

  test(`${backend}: a batch has the outcomes of its plants created one after the other`, async (t) => {
    const store = await openFresh(t);
    await createOne(store, { id: 1n, name: 'old' });
    const results = await store.createPlants([
      { id: 2n, name: 'new' },
      { id: 1n, name: 'other' },
      { id: 3n, name: 'twice' },
      { id: 3n, name: 'twice' },
      { id: 4n, name: 'first' },
      { id: 4n, name: 'second' },
      { id: 1n, name: 'old' },
    ]);
    assert.deepEqual(results, [
      { outcome: 'created' },
      { outcome: 'conflict', existing: { id: 1n, name: 'old' } },
      { outcome: 'created' },
      { outcome: 'replayed' },
      { outcome: 'created' },
      { outcome: 'conflict', existing: { id: 4n, name: 'first' } },
      { outcome: 'replayed' },
    ]);
    assert.equal(await store.countPlants(), 4n);
    assert.deepEqual(await store.createPlants([]), []);
  });

  test(`${backend}: tokens move between stores with their ids, hashes and revocations`, async (t) => {
    const source = await openFresh(t);
    const target = await openFresh(t);
    const createdAt = new Date('2026-01-01T00:00:00.000Z');
    await source.insertToken({ name: 'a', hash: 'h-a', createdAt, expiresAt: null });
    await source.insertToken({ name: 'b', hash: 'h-b', createdAt, expiresAt: new Date('2027-01-01T00:00:00.000Z') });
    assert.equal(await target.importTokens(await source.exportTokens()), 2);
    assert.deepEqual(await target.exportTokens(), await source.exportTokens());

    const revokedAt = new Date('2026-02-01T00:00:00.000Z');
    await source.revokeToken({ name: 'a' }, revokedAt);
    assert.equal(await target.importTokens(await source.exportTokens()), 0, 'nothing is new the second time');
    assert.deepEqual((await target.findTokenByHash('h-a'))?.revokedAt, revokedAt, 'the revocation is carried over');

    const next = await target.insertToken({ name: 'c', hash: 'h-c', createdAt, expiresAt: null });
    assert.ok(next !== 'name-taken' && next.id > 2, 'new ids follow the imported ones');
    await assert.rejects(target.importTokens([{ id: 3, name: 'd', hash: 'h-d', createdAt, expiresAt: null, revokedAt: null }]), /held by a different token/);
  });

  test(`${backend}: ping answers while the store is open`, async (t) => {
    const store = await openFresh(t);
    await store.ping();
  });
}
