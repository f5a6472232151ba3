import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import type { Subscription } from '../../src/store/webhook-store.js';
import { testBackends } from '../helpers/backends.js';

/*
 * What every store does for the operator's webhook commands (pause, resume,
 * messages, resend, update), whatever its backend.
 */
for (const { name: backend, freshUrl } of await testBackends('webhook operations in the store')) {
  const openFresh = async (t: TestContext): Promise<Store> => {
    const store = await openStore({ database: parseDatabaseUrl(await freshUrl(t), 'test'), databasePoolSize: 2 });
    t.after(() => store.close());
    return store;
  };

  test(`${backend}: a paused subscription still gets its messages written, none is claimed; a resume lets them go with a new retry window`, async (t) => {
    const store = await openFresh(t);
    const paused = await addSubscription(store, 'http://127.0.0.1:9/paused');
    const active = await addSubscription(store, 'http://127.0.0.1:9/active');
    assert.equal(await store.webhooks.setPaused(paused.id, true), true);
    assert.equal(await store.webhooks.setPaused(paused.id, true), false, 'already paused');
    assert.equal(await store.webhooks.setPaused(999, true), undefined);
    await store.createPlants([{ id: 1n, name: 'a' }, { id: 2n, name: 'b' }]);
    const claim = (subscriptionId: number) => store.webhooks.claimMessages({ subscriptionId, owner: 'a', limit: 10, leaseMs: 60_000 });
    assert.deepEqual(await claim(paused.id), [], 'nothing claimed while paused');
    assert.equal((await claim(active.id)).length, 2, 'the other subscription is not held');
    const held = await store.webhooks.listMessages({ subscriptionId: paused.id, limit: 10 });
    assert.deepEqual(held.map((message) => [message.plantId, message.state, message.attempts]), [[2n, 'pending', 0], [1n, 'pending', 0]], 'kept, newest first');
    assert.ok(held.every((message) => message.nextAttemptAt !== null && message.finishedAt === null && message.lastResult === null));
    const [listedPaused, listedActive] = await store.webhooks.listSubscriptions();
    assert.ok(listedPaused?.pausedAt instanceof Date && listedActive?.pausedAt === null);
    assert.deepEqual(
      (await store.webhooks.backlog()).map(({ subscriptionId, paused: isPaused, pending }) => [subscriptionId, isPaused, pending]).sort(),
      [[paused.id, true, 2], [active.id, false, 2]].sort(),
    );
    assert.ok((await store.webhooks.activeSubscriptions()).find((subscription) => subscription.id === paused.id)?.pausedAt instanceof Date);

    const resumedAt = new Date();
    assert.equal(await store.webhooks.setPaused(paused.id, false), true);
    assert.equal(await store.webhooks.setPaused(paused.id, false), false, 'already active');
    const claimed = await claim(paused.id);
    assert.deepEqual(claimed.map((message) => [message.plant.id, message.attempt]), [[1n, 1], [2n, 1]]);
    for (const message of claimed) {
      assert.ok(message.queuedAt >= resumedAt, `the retry window starts at the resume, not at the commit (${message.createdAt.toISOString()})`);
    }
  });

  test(`${backend}: messages list newest first with their status, attempts and last result; resend queues failed or delivered ones under their own number`, async (t) => {
    const store = await openFresh(t);
    const subscription = await addSubscription(store, 'http://127.0.0.1:9/hook');
    const other = await addSubscription(store, 'http://127.0.0.1:9/other');
    await store.createPlants([{ id: 9007199254740993n, name: 'a' }, { id: 2n, name: 'b' }, { id: 3n, name: 'c' }]);
    const claim = () => store.webhooks.claimMessages({ subscriptionId: subscription.id, owner: 'a', limit: 10, leaseMs: 60_000 });
    const [delivered, failed, retried] = await claim();
    const key = (message: typeof delivered) => ({ messageId: message!.id, subscriptionId: subscription.id, attempt: message!.attempt });
    await store.webhooks.settleMessages('a', [
      { ...key(delivered), outcome: 'delivered', answer: 'HTTP 204' },
      { ...key(failed), outcome: 'failed', error: 'HTTP 500: down\u001b[2J' },
      { ...key(retried), outcome: 'retry', retryInMs: 60_000, error: 'ECONNREFUSED' },
    ]);
    const listed = await store.webhooks.listMessages({ subscriptionId: subscription.id, limit: 10 });
    assert.deepEqual(
      listed.map(({ id, plantId, state, attempts, lastResult }) => ({ id, plantId, state, attempts, lastResult })),
      [
        { id: retried!.id, plantId: 3n, state: 'pending', attempts: 1, lastResult: 'ECONNREFUSED' },
        { id: failed!.id, plantId: 2n, state: 'failed', attempts: 1, lastResult: 'HTTP 500: down\u001b[2J' },
        { id: delivered!.id, plantId: 9007199254740993n, state: 'delivered', attempts: 1, lastResult: 'HTTP 204' },
      ],
    );
    assert.ok(listed[0]!.nextAttemptAt! > new Date(), 'a pending message says when it is due');
    assert.ok(listed.slice(1).every((message) => message.nextAttemptAt === null && message.finishedAt instanceof Date));
    assert.deepEqual((await store.webhooks.listMessages({ subscriptionId: subscription.id, state: 'failed', limit: 10 })).map((message) => message.id), [failed!.id]);
    assert.deepEqual((await store.webhooks.listMessages({ subscriptionId: subscription.id, limit: 1 })).map((message) => message.id), [retried!.id]);

    const counts = async () => (await store.webhooks.listSubscriptions()).filter((listed) => listed.id === subscription.id).map(({ pending, delivered, failed }) => ({ pending, delivered, failed }))[0];
    assert.deepEqual(await counts(), { pending: 1, delivered: 1, failed: 1 });
    assert.deepEqual(await store.webhooks.resendMessages({ subscriptionId: subscription.id, messageId: retried!.id }), { queued: 0, pending: 1 }, 'a pending one is left as it is');
    assert.deepEqual(await store.webhooks.resendMessages({ subscriptionId: other.id, messageId: failed!.id }), { queued: 0, pending: 0 }, "another subscription's message is not found");
    assert.deepEqual(await store.webhooks.resendMessages({ subscriptionId: subscription.id, messageId: 123456789n }), { queued: 0, pending: 0 });
    const before = new Date();
    assert.deepEqual(await store.webhooks.resendMessages({ subscriptionId: subscription.id, messageId: delivered!.id }), { queued: 1, pending: 0 });
    assert.deepEqual(await store.webhooks.resendMessages({ subscriptionId: subscription.id }), { queued: 1, pending: 0 }, 'every failed one');
    assert.deepEqual(await store.webhooks.resendMessages({ subscriptionId: subscription.id }), { queued: 0, pending: 0 }, 'none failed any more');
    assert.deepEqual(await counts(), { pending: 3, delivered: 0, failed: 0 }, 'counted by their latest outcome');
    const again = await claim();
    assert.deepEqual(
      again.map((message) => [message.id, message.plant.id, message.attempt]),
      [[delivered!.id, 9007199254740993n, 1], [failed!.id, 2n, 1]],
      'the same numbers, due at once, from their first attempt (the retried one is not due yet)',
    );
    for (const message of again) assert.ok(message.queuedAt >= before && message.createdAt <= before, 'a whole retry window from the resend');
  });

  test(`${backend}: update moves a subscription to another URL, refusing one that another active subscription has unless allowed`, async (t) => {
    const store = await openFresh(t);
    const first = await addSubscription(store, 'http://127.0.0.1:9/first', 'the first');
    const second = await addSubscription(store, 'http://127.0.0.1:9/second');
    const moved = await store.webhooks.updateSubscription({ id: first.id, url: 'http://127.0.0.1:9/moved' }, false);
    assert.deepEqual(moved, { ...first, url: 'http://127.0.0.1:9/moved' }, 'the same secret and key; the description kept');
    assert.deepEqual(await store.webhooks.updateSubscription({ id: first.id, url: second.url }, false), { duplicateOf: second.id });
    assert.deepEqual(await store.webhooks.updateSubscription({ id: first.id, url: 'http://127.0.0.1:9/moved' }, false), moved, 'its own URL is no duplicate');
    const shared = await store.webhooks.updateSubscription({ id: first.id, url: second.url, description: null }, true);
    assert.deepEqual(shared, { ...first, url: second.url, description: null });
    assert.deepEqual(await store.webhooks.activeSubscriptions(), [shared, second]);
    await store.webhooks.removeSubscription(second.id);
    assert.equal(await store.webhooks.updateSubscription({ id: second.id, url: 'http://127.0.0.1:9/x' }, false), undefined, 'a removed one is not updated');
  });
}

async function addSubscription(store: Store, url: string, description: string | null = null): Promise<Subscription> {
  const added = await store.webhooks.addSubscription({ url, description, secret: `whsec_${Buffer.from(url).toString('base64')}`, key: 'k', createdAt: new Date() }, false);
  assert.ok('id' in added, `${url} added`);
  return added;
}
