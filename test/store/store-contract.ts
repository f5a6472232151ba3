import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { NewPlant } from '../../src/plants/plant.js';
import type { CreatePlantResult, Store } from '../../src/store/store.js';
import type { ClaimedMessage, Subscription } from '../../src/store/webhook-store.js';

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
    assert.deepEqual(a, { id: a.id, name: 'a', createdAt, expiresAt: null, revokedAt: null, lastUsedAt: null, rateLimit: null });
    assert.equal(await store.insertToken({ name: 'a', hash: 'h-a2', createdAt, expiresAt: null }), 'name-taken');
    assert.deepEqual(await store.findTokenByHash('h-b'), b);
    assert.equal(await store.findTokenByHash('nope'), undefined);

    const revokedAt = new Date('2026-06-01T00:00:00.000Z');
    assert.deepEqual(await store.revokeToken({ name: 'a' }, revokedAt), [{ ...a, revokedAt }]);
    assert.deepEqual(await store.revokeToken({ id: b.id }, revokedAt), [{ ...b, revokedAt }]);
    assert.deepEqual(await store.revokeToken({ id: b.id }, revokedAt), [], 'a revoked token is not revoked again');
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
    // Every id new, but some twice: the later plants of an id are answered against the first.
    assert.deepEqual(
      await store.createPlants([
        { id: 5n, name: 'five' },
        { id: 5n, name: 'five' },
        { id: 6n, name: 'six', tag: 'new' },
        { id: 5n, name: 'five', tag: 'other' },
      ]),
      [{ outcome: 'created' }, { outcome: 'replayed' }, { outcome: 'created' }, { outcome: 'conflict', existing: { id: 5n, name: 'five' } }],
    );
    assert.equal(await store.countPlants(), 6n);
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
    await assert.rejects(
      target.importTokens([{ id: 3, name: 'd', hash: 'h-d', createdAt, expiresAt: null, revokedAt: null, lastUsedAt: null, rateLimit: null }]),
      /held by a different token/,
    );
  });

  test(`${backend}: a copy keeps the later last use and the earlier revocation of a token both stores hold`, async (t) => {
    const source = await openFresh(t);
    const target = await openFresh(t);
    const at = (day: number) => new Date(Date.UTC(2026, 0, day));
    const a = await source.insertToken({ name: 'a', hash: 'h-a', createdAt: at(1), expiresAt: null });
    assert.ok(a !== 'name-taken');
    await target.importTokens(await source.exportTokens());
    // Here it was rotated, to retire on day 30; there it was revoked on day 12, and used later.
    await target.recordTokenUses([{ id: a.id, at: at(5) }]);
    await source.recordTokenUses([{ id: a.id, at: at(9) }]);
    await target.replaceToken({ name: 'a', hash: 'h-a2', createdAt: at(10), expiresAt: null }, at(30), { requireActive: true });
    await source.revokeToken({ id: a.id }, at(12));
    await target.importTokens(await source.exportTokens());
    const copied = await target.findTokenByHash('h-a');
    assert.deepEqual([copied?.lastUsedAt, copied?.revokedAt], [at(9), at(12)]);
  });

  test(`${backend}: a token's last use only moves forward, whatever order the uses of several servers arrive in`, async (t) => {
    const store = await openFresh(t);
    const createdAt = new Date('2026-01-01T00:00:00.000Z');
    const a = await store.insertToken({ name: 'a', hash: 'h-a', createdAt, expiresAt: null });
    const b = await store.insertToken({ name: 'b', hash: 'h-b', createdAt, expiresAt: null });
    const unused = await store.insertToken({ name: 'unused', hash: 'h-u', createdAt, expiresAt: null });
    assert.ok(a !== 'name-taken' && b !== 'name-taken' && unused !== 'name-taken');
    const later = new Date('2026-03-01T12:00:00.123Z');
    const earlier = new Date('2026-02-01T12:00:00.456Z');
    await store.recordTokenUses([
      { id: a.id, at: later },
      { id: b.id, at: earlier },
    ]);
    await store.recordTokenUses([
      { id: a.id, at: earlier },
      { id: b.id, at: later },
    ]);
    await store.recordTokenUses([]);
    const lastUses = Object.fromEntries((await store.listTokens()).map((token) => [token.name, token.lastUsedAt]));
    assert.deepEqual(lastUses, { a: later, b: later, unused: null });
    assert.deepEqual((await store.findTokenByHash('h-a'))?.lastUsedAt, later);
  });

  test(`${backend}: replacing a token retires the name's working tokens at the time given and stores the new one, in one step`, async (t) => {
    const store = await openFresh(t);
    const at = (hour: number) => new Date(Date.UTC(2026, 0, 1, hour));
    const old = await store.insertToken({ name: 'ci', hash: 'h-1', createdAt: at(0), expiresAt: null });
    assert.ok(old !== 'name-taken');
    assert.equal(await store.replaceToken({ name: 'cd', hash: 'h-x', createdAt: at(1), expiresAt: null }, at(1), { requireActive: true }), 'no-active-token');
    assert.equal(await store.findTokenByHash('h-x'), undefined, 'nothing is stored when there was nothing to replace');

    // A rotation with a grace: the old token retires at hour 25, beside its successor.
    const rotated = await store.replaceToken({ name: 'ci', hash: 'h-2', createdAt: at(1), expiresAt: null }, at(25), { requireActive: true });
    assert.ok(typeof rotated === 'object');
    assert.deepEqual(rotated.retired, [{ ...old, revokedAt: at(25) }]);
    assert.deepEqual(rotated.record, { id: rotated.record.id, name: 'ci', createdAt: at(1), expiresAt: null, revokedAt: null, lastUsedAt: null, rateLimit: null });
    assert.equal(await store.insertToken({ name: 'ci', hash: 'h-3', createdAt: at(2), expiresAt: null }), 'name-taken', 'the successor holds the name');

    // Another, with a shorter grace: the one still retiring stops no later than the new grace either.
    const again = await store.replaceToken({ name: 'ci', hash: 'h-4', createdAt: at(2), expiresAt: null }, at(3), { requireActive: true });
    assert.ok(typeof again === 'object');
    assert.deepEqual(again.retired.map((token) => [token.id, token.revokedAt]).sort(), [
      [old.id, at(3)],
      [rotated.record.id, at(3)],
    ]);

    // Revoking by id ends one token's grace early; by name, every token of the name that still works.
    assert.deepEqual((await store.revokeToken({ id: old.id }, at(2))).map((token) => token.revokedAt), [at(2)]);
    assert.deepEqual((await store.revokeToken({ id: old.id }, at(2))), [], 'a token revoked already is not revoked again');
    const revoked = await store.revokeToken({ name: 'ci' }, at(2));
    assert.deepEqual(revoked.map((token) => [token.id, token.revokedAt]).sort(), [
      [rotated.record.id, at(2)],
      [again.record.id, at(2)],
    ]);

    // Replacing at once (create --replace) needs no active token, and revokes the one there is.
    const first = await store.replaceToken({ name: 'qs', hash: 'h-5', createdAt: at(4), expiresAt: null }, at(4), { requireActive: false });
    assert.ok(typeof first === 'object');
    assert.deepEqual(first.retired, []);
    const second = await store.replaceToken({ name: 'qs', hash: 'h-6', createdAt: at(5), expiresAt: null }, at(5), { requireActive: false });
    assert.ok(typeof second === 'object');
    assert.deepEqual(second.retired, [{ ...first.record, revokedAt: at(5) }]);
  });

  test(`${backend}: ping answers while the store is open`, async (t) => {
    const store = await openFresh(t);
    await store.ping();
  });

  test(`${backend}: a created plant gets one outbox message per active subscription in its batch; a replay or a conflict gets none`, async (t) => {
    const store = await openFresh(t);
    await store.createPlants([{ id: 1n, name: 'before any subscription' }]);
    const one = await addSubscription(store, 'http://127.0.0.1:9/one');
    const two = await addSubscription(store, 'http://127.0.0.1:9/two');
    let written = 0;
    store.webhooks.onMessagesWritten(() => (written += 1));
    const id = 9007199254740993n;
    const results = await store.createPlants([
      { id, name: 'Fern', tag: 'leafy' },
      { id, name: 'Fern', tag: 'leafy' },
      { id: 1n, name: 'before any subscription' },
      { id: 1n, name: 'another' },
      { id: -5n, name: 'Moss' },
    ]);
    assert.deepEqual(results.map((result) => result.outcome), ['created', 'replayed', 'replayed', 'conflict', 'created']);
    assert.equal(written, 1, 'told once, after the commit');
    await store.createPlants([{ id, name: 'Fern', tag: 'leafy' }]);
    assert.equal(written, 1, 'a replay writes nothing');
    for (const subscription of [one, two]) {
      const claimed = await store.webhooks.claimMessages({ subscriptionId: subscription.id, owner: 'a', limit: 10, leaseMs: 60_000 });
      // Order is not promised: compared by plant id.
      assert.deepEqual(
        claimed
          .map((message) => ({ plant: message.plant, attempt: message.attempt, subscriptionId: message.subscriptionId }))
          .sort((a, b) => (a.plant.id < b.plant.id ? -1 : 1)),
        [
          { plant: { id: -5n, name: 'Moss' }, attempt: 1, subscriptionId: subscription.id },
          { plant: { id, name: 'Fern', tag: 'leafy' }, attempt: 1, subscriptionId: subscription.id },
        ],
      );
    }
    assert.deepEqual(
      (await store.webhooks.listSubscriptions()).map((listed) => [listed.id, listed.pending]),
      [
        [one.id, 2],
        [two.id, 2],
      ],
    );
  });

  test(`${backend}: claims take every message of many batches once, in the order created, however the batches split them`, async (t) => {
    const store = await openFresh(t);
    const subscription = await addSubscription(store, 'http://127.0.0.1:9/batches');
    // Ten batches of ten: a claim of 32 ends inside the fourth, whose rest must stay pending.
    for (let batch = 0; batch < 10; batch++) {
      await store.createPlants(Array.from({ length: 10 }, (_, i) => ({ id: BigInt(batch * 10 + i + 1), name: `plant ${batch * 10 + i + 1}` })));
    }
    const pending = async () => (await store.webhooks.listSubscriptions()).find((listed) => listed.id === subscription.id)!.pending;
    assert.equal(await pending(), 100);
    const listed = await store.webhooks.listMessages({ subscriptionId: subscription.id, state: 'pending', limit: 3 });
    assert.deepEqual(listed.map((message) => message.plantId), [100n, 99n, 98n], 'listed newest first, packed or not');
    const taken: bigint[] = [];
    for (const expected of [32, 32, 32, 4, 0]) {
      const claimed = await store.webhooks.claimMessages({ subscriptionId: subscription.id, owner: 'a', limit: 32, leaseMs: 60_000 });
      assert.equal(claimed.length, expected);
      assert.ok(claimed.every((message) => message.attempt === 1 && message.id !== null));
      taken.push(...claimed.map((message) => message.plant.id));
      // Leased messages stay pending until settled; none is lost or counted twice while batches are unpacked.
      assert.equal(await pending(), 100);
    }
    assert.deepEqual(taken, Array.from({ length: 100 }, (_, i) => BigInt(i + 1)));
    const numbered = await store.webhooks.listMessages({ subscriptionId: subscription.id, limit: 200 });
    assert.equal(numbered.length, 100);
    assert.equal(new Set(numbered.map((message) => message.id)).size, 100, 'each message numbered once');
  });

  test(`${backend}: an import has the outcomes of a create, in one transaction, and writes no webhook message`, async (t) => {
    const store = await openFresh(t);
    await createOne(store, { id: 1n, name: 'old' });
    const subscription = await addSubscription(store, 'http://127.0.0.1:9/one');
    let told = 0;
    store.webhooks.onMessagesWritten(() => (told += 1));
    const id = 2n ** 63n - 1n;
    const results = await store.importPlants([
      { id, name: 'Fern', tag: 'leafy' },
      { id: 1n, name: 'other' },
      { id: 1n, name: 'old' },
      { id: 3n, name: 'twice' },
      { id: 3n, name: 'twice' },
      { id: 3n, name: 'third' },
      { id: -(2n ** 63n), name: 'Moss', tag: '' },
    ]);
    assert.deepEqual(results, [
      { outcome: 'created' },
      { outcome: 'conflict', existing: { id: 1n, name: 'old' } },
      { outcome: 'replayed' },
      { outcome: 'created' },
      { outcome: 'replayed' },
      { outcome: 'conflict', existing: { id: 3n, name: 'twice' } },
      { outcome: 'created' },
    ]);
    assert.deepEqual(await store.listPlants({ limit: 10 }), [
      { id: -(2n ** 63n), name: 'Moss', tag: '' },
      { id: 1n, name: 'old' },
      { id: 3n, name: 'twice' },
      { id, name: 'Fern', tag: 'leafy' },
    ]);
    assert.deepEqual(await store.importPlants([]), []);
    assert.equal(told, 0, 'no message, so none to tell of');
    assert.deepEqual((await store.webhooks.listSubscriptions()).map((listed) => [listed.id, listed.pending]), [[subscription.id, 0]]);
    assert.deepEqual(await store.webhooks.claimMessages({ subscriptionId: subscription.id, owner: 'a', limit: 10, leaseMs: 60_000 }), []);
    // The outbox still works for the plants created afterwards.
    await createOne(store, { id: 4n, name: 'created' });
    assert.deepEqual((await store.webhooks.listSubscriptions()).map((listed) => listed.pending), [1]);
  });

  test(`${backend}: a claim leases messages to one owner; after the lease another owner takes them, and the first can no longer settle`, async (t) => {
    const store = await openFresh(t);
    const subscription = await addSubscription(store, 'http://127.0.0.1:9/hook');
    await store.createPlants([{ id: 1n, name: 'a' }, { id: 2n, name: 'b' }, { id: 3n, name: 'c' }]);
    const claim = (owner: string, leaseMs: number) => store.webhooks.claimMessages({ subscriptionId: subscription.id, owner, limit: 2, leaseMs });
    const first = await claim('a', 200);
    assert.deepEqual(first.map((message) => message.plant.id), [1n, 2n], 'oldest first, at most the limit');
    const second = await claim('b', 60_000);
    assert.deepEqual(second.map((message) => message.plant.id), [3n], 'leased messages are not claimed again');
    assert.deepEqual(await claim('b', 60_000), []);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const taken = await claim('b', 60_000);
    assert.deepEqual(taken.map((message) => [message.plant.id, message.attempt]), [[1n, 2], [2n, 2]], 'after the lease, a second attempt');
    // The first owner's late outcomes change nothing.
    await store.webhooks.settleMessages('a', first.map((message) => ({ messageId: message.id, subscriptionId: subscription.id, attempt: message.attempt, outcome: 'delivered' as const, answer: 'HTTP 204' })));
    assert.deepEqual((await store.webhooks.listSubscriptions()).map((listed) => [listed.pending, listed.delivered]), [[3, 0]]);
    await store.webhooks.settleMessages('b', [
      { messageId: taken[0]!.id, subscriptionId: subscription.id, attempt: 2, outcome: 'delivered', answer: 'HTTP 200' },
      { messageId: taken[1]!.id, subscriptionId: subscription.id, attempt: 2, outcome: 'failed', error: 'HTTP 500' },
      { messageId: second[0]!.id, subscriptionId: subscription.id, attempt: 1, outcome: 'retry', retryInMs: 0, error: 'ECONNREFUSED' },
    ]);
    const [listed] = await store.webhooks.listSubscriptions();
    assert.deepEqual([listed?.pending, listed?.delivered, listed?.failed], [1, 1, 1]);
    assert.equal(listed?.lastError, 'ECONNREFUSED', 'the last error is that of the last settlement listed');
    const retried = await claim('c', 60_000);
    assert.deepEqual(retried.map((message) => [message.plant.id, message.attempt]), [[3n, 2]], 'a retry comes due again');
    // Finished messages go once past the retention; the pending one stays.
    assert.equal(await store.webhooks.pruneMessages(new Date(Date.now() - 60_000)), 0);
    assert.equal(await store.webhooks.pruneMessages(new Date(Date.now() + 1000)), 2);
    assert.deepEqual((await store.webhooks.backlog()).map((row) => [row.subscriptionId, row.pending]), [[subscription.id, 1]]);
  });

  test(`${backend}: a released claim is due again at once, its attempt uncounted; only its own claim can release it`, async (t) => {
    const store = await openFresh(t);
    const subscription = await addSubscription(store, 'http://127.0.0.1:9/hook');
    await store.createPlants([{ id: 1n, name: 'a' }, { id: 2n, name: 'b' }]);
    const claim = (owner: string) => store.webhooks.claimMessages({ subscriptionId: subscription.id, owner, limit: 10, leaseMs: 60_000 });
    const release = (owner: string, messages: ClaimedMessage[]) =>
      store.webhooks.settleMessages(owner, messages.map((message) => ({ messageId: message.id, subscriptionId: subscription.id, attempt: message.attempt, outcome: 'released' as const })));
    const held = await claim('a');
    assert.deepEqual(held.map((message) => [message.plant.id, message.attempt]), [[1n, 1], [2n, 1]]);
    await release('b', held);
    assert.deepEqual(await claim('b'), [], "another owner's release changes nothing: the lease holds");
    await release('a', held.slice(0, 1));
    const again = await claim('b');
    assert.deepEqual(again.map((message) => [message.id, message.plant.id, message.attempt]), [[held[0]!.id, 1n, 1]], 'due at once, as the same message, with its attempt uncounted');
    await store.webhooks.settleMessages('a', [{ messageId: held[0]!.id, subscriptionId: subscription.id, attempt: 1, outcome: 'delivered', answer: 'HTTP 204' }]);
    const [listed] = await store.webhooks.listSubscriptions();
    assert.deepEqual([listed?.pending, listed?.delivered, listed?.lastError], [2, 0, null], 'a released claim is fenced like any other, and is no error');
  });

  test(`${backend}: removing a subscription drops its pending messages and writes no more; rotating keeps the old secret`, async (t) => {
    const store = await openFresh(t);
    const kept = await addSubscription(store, 'http://127.0.0.1:9/kept');
    const removed = await addSubscription(store, 'http://127.0.0.1:9/removed');
    await store.createPlants([{ id: 1n, name: 'a' }]);
    assert.equal(await store.webhooks.removeSubscription(removed.id), true);
    assert.equal(await store.webhooks.removeSubscription(removed.id), false);
    await store.createPlants([{ id: 2n, name: 'b' }]);
    assert.deepEqual(await store.webhooks.claimMessages({ subscriptionId: removed.id, owner: 'a', limit: 10, leaseMs: 1000 }), []);
    assert.deepEqual((await store.webhooks.listSubscriptions()).map((listed) => [listed.id, listed.pending]), [[kept.id, 2]]);
    assert.deepEqual((await store.webhooks.activeSubscriptions()).map((active) => active.id), [kept.id]);
    const now = new Date();
    const until = new Date(now.getTime() + 3_600_000);
    const rotated = await store.webhooks.rotateSecret({ id: kept.id, secret: 'whsec_bmV3', retiredUntil: until, now, mostRetired: 5 });
    assert.deepEqual(rotated, { ...kept, secret: 'whsec_bmV3', retiredSecrets: [{ secret: kept.secret, until }] });
    assert.deepEqual(await store.webhooks.activeSubscriptions(), [rotated]);
    assert.equal(await store.webhooks.rotateSecret({ id: removed.id, secret: 'whsec_eA==', retiredUntil: until, now, mostRetired: 5 }), undefined);
  });

  test(`${backend}: each retired secret keeps its own window; a rotation deletes the ended ones and is refused while the most are live`, async (t) => {
    const store = await openFresh(t);
    const subscription = await addSubscription(store, 'http://127.0.0.1:9/hook');
    const at = (minutes: number) => new Date(Date.parse('2030-01-01T00:00:00.000Z') + minutes * 60_000);
    const rotate = (secret: string, minutes: number) =>
      store.webhooks.rotateSecret({ id: subscription.id, secret, retiredUntil: at(minutes + 60), now: at(minutes), mostRetired: 2 });

    await rotate('whsec_c2Vjb25k', 0);
    const twice = await rotate('whsec_dGhpcmQ=', 10);
    assert.deepEqual(twice, {
      ...subscription,
      secret: 'whsec_dGhpcmQ=',
      retiredSecrets: [
        { secret: subscription.secret, until: at(60) },
        { secret: 'whsec_c2Vjb25k', until: at(70) },
      ],
    }, 'the second rotation keeps the first secret until its own end');

    assert.deepEqual(await rotate('whsec_Zm91cnRo', 20), { liveUntil: at(60) }, 'two live: refused, naming when the oldest ends');
    assert.deepEqual(await store.webhooks.activeSubscriptions(), [twice], 'a refused rotation changes nothing');

    const later = await rotate('whsec_Zm91cnRo', 60);
    assert.deepEqual(later, {
      ...subscription,
      secret: 'whsec_Zm91cnRo',
      retiredSecrets: [
        { secret: 'whsec_c2Vjb25k', until: at(70) },
        { secret: 'whsec_dGhpcmQ=', until: at(120) },
      ],
    }, 'once the first window ends, a rotation goes through and deletes it');
  });

  test(`${backend}: a URL that an active subscription has is refused unless allowed; a removed one does not count`, async (t) => {
    const store = await openFresh(t);
    const first = await addSubscription(store, 'https://example.com/hooks');
    const subscription = { url: 'https://example.com/hooks', description: null, secret: 'whsec_b3RoZXI=', key: 'k2', createdAt: new Date() };
    assert.deepEqual(await store.webhooks.addSubscription(subscription, false), { duplicateOf: first.id });
    assert.deepEqual((await store.webhooks.activeSubscriptions()).map((active) => active.id), [first.id], 'nothing written');
    const second = await store.webhooks.addSubscription(subscription, true);
    assert.ok('id' in second && second.id !== first.id, 'allowed on purpose');
    await store.webhooks.removeSubscription(first.id);
    await store.webhooks.removeSubscription(second.id);
    const again = await store.webhooks.addSubscription(subscription, false);
    assert.ok('id' in again, 'a removed subscription leaves its URL free');
  });
}

async function addSubscription(store: Store, url: string): Promise<Subscription> {
  const added = await store.webhooks.addSubscription({ url, description: null, secret: `whsec_${Buffer.from(url).toString('base64')}`, key: 'k', createdAt: new Date() }, false);
  assert.ok('id' in added, `${url} added`);
  return added;
}
