import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import { addSubscription } from '../../src/webhooks/subscriptions.js';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { sqlite } from '../helpers/backends.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

test('creates whose messages no subscription has room for wake no turn: a paused subscription is looked at only at the poll, and resuming it delivers its messages', async (t) => {
  const store = await openStore({ database: parseDatabaseUrl(await sqlite.freshUrl(t), 'test') });
  const receiver = await WebhookReceiver.start(t);
  const added = await addSubscription(store.webhooks, receiver.url, 'paused');
  assert.ok(added.added);
  receiver.secrets = [added.subscription.secret];
  assert.equal(await store.webhooks.setPaused(added.subscription.id, true), true);
  let turns = 0;
  const activeSubscriptions = store.webhooks.activeSubscriptions.bind(store.webhooks);
  store.webhooks.activeSubscriptions = () => ((turns += 1), activeSubscriptions());
  const pollMs = 60_000;
  const options = { timeoutMs: 1000, retryMinMs: 50, retryMaxMs: 200, retryForMs: 60_000, concurrency: 8, retentionMs: 3_600_000, pollMs };
  const dispatcher = new WebhookDispatcher(store.webhooks, options, pino({ enabled: false }) as unknown as FastifyBaseLogger);
  // As a server tells its deliverer of the messages it commits.
  store.webhooks.onMessagesWritten(() => dispatcher.messagesWritten());
  dispatcher.start();
  t.after(async () => {
    await dispatcher.stop(1000);
    await store.close();
  });
  // The first turn reads the subscriptions; it comes at once after start.
  await until('the first turn', () => turns === 1);

  const batches = 40;
  for (let batch = 0; batch < batches; batch++) {
    await store.createPlants([{ id: BigInt(batch + 1), name: 'held back' }]);
    // A turn the batch woke would start first: its timer was set before this one, for as soon.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.equal(turns, 1, `${batches} batches of messages for a paused subscription woke ${turns - 1} turns`);

  // Resumed, it is found at the next turn: here the one a wake asks for, as the poll would.
  assert.equal(await store.webhooks.setPaused(added.subscription.id, false), true);
  dispatcher.wake();
  await until('every message is delivered after the resume', () => receiver.deliveredByPlant().size === batches);
});
