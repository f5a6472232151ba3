import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { parseDatabaseUrl } from '../../src/config/config.js';
import type { NewPlant } from '../../src/plants/plant.js';
import { openStore } from '../../src/store/open-store.js';
import { addSubscription } from '../../src/webhooks/subscriptions.js';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { sqlite } from '../helpers/backends.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/** What docs/webhooks.md promises while creates keep the event loop over 80 % busy... */
const MOST_TURNS_A_SECOND = 5;
/** ...the most messages a turn claims for a subscription then: what it may send until the next turn... */
const MOST_CLAIMED_A_TURN = 16;
/** ...and the most it delivers: 8 every 100 ms. */
const MOST_DELIVERED_A_SECOND = 80;
/** The turns counted: from when the pace has had its first windows to hold deliveries back, for this long. */
const COUNTED_FROM_MS = 500;
const COUNTED_MS = 2000;
/** Each step of the creates: the loop spun this long (the requests' own work), then a batch committed. */
const SPIN_MS = 4;
const BATCH = 16;

test(`while creates keep the event loop busy, the dispatcher takes at most ${MOST_TURNS_A_SECOND} turns a second, claims at most ${MOST_CLAIMED_A_TURN} messages a turn, and delivers at most ${MOST_DELIVERED_A_SECOND} a second, but some`, async (t) => {
  const store = await openStore({ database: parseDatabaseUrl(await sqlite.freshUrl(t), 'test') });
  const receiver = await WebhookReceiver.start(t);
  const added = await addSubscription(store.webhooks, receiver.url, 'turns');
  assert.ok(added.added);
  receiver.secrets = [added.subscription.secret];
  // Every turn that claims reads the subscriptions once, first.
  let turns = 0;
  const activeSubscriptions = store.webhooks.activeSubscriptions.bind(store.webhooks);
  store.webhooks.activeSubscriptions = () => ((turns += 1), activeSubscriptions());
  const counted: { turns: number; delivered: number }[] = [];
  // The claims' sizes, once the counting starts (its first mark is set).
  const claimed: number[] = [];
  const claimMessages = store.webhooks.claimMessages.bind(store.webhooks);
  store.webhooks.claimMessages = async (claim) => {
    const messages = await claimMessages(claim);
    if (counted.length > 0) claimed.push(messages.length);
    return messages;
  };
  const creates = { plantsCommitted: 0 };
  const options = { timeoutMs: 1000, retryMinMs: 50, retryMaxMs: 200, retryForMs: 60_000, concurrency: 32, retentionMs: 3_600_000, pollMs: 1000 };
  const dispatcher = new WebhookDispatcher(store.webhooks, creates, options, pino({ enabled: false }) as unknown as FastifyBaseLogger);
  dispatcher.start();
  t.after(async () => {
    await dispatcher.stop(1000);
    await store.close();
  });

  const started = Date.now();
  let nextId = 1n;
  await new Promise<void>((resolve, reject) => {
    const step = () => {
      const spinUntil = performance.now() + SPIN_MS;
      while (performance.now() < spinUntil);
      const plants: NewPlant[] = Array.from({ length: BATCH }, () => ({ id: nextId++, name: 'busy' }));
      store.createPlants(plants).then(() => {
        creates.plantsCommitted += BATCH;
        const elapsed = Date.now() - started;
        if (counted.length === 0 && elapsed >= COUNTED_FROM_MS) counted.push({ turns, delivered: receiver.received.length });
        if (elapsed < COUNTED_FROM_MS + COUNTED_MS) return void setImmediate(step);
        counted.push({ turns, delivered: receiver.received.length });
        resolve();
      }, reject);
    };
    step();
  });
  const [from, to] = counted as [{ turns: number; delivered: number }, { turns: number; delivered: number }];
  const seconds = COUNTED_MS / 1000;
  t.diagnostic(`${to.turns - from.turns} turns, ${to.delivered - from.delivered} deliveries and claims of at most ${Math.max(0, ...claimed)} in ${seconds} s of busy creates`);
  assert.ok(to.turns - from.turns <= MOST_TURNS_A_SECOND * seconds + 1, `${to.turns - from.turns} turns in ${seconds} s`);
  assert.ok(
    claimed.every((size) => size <= MOST_CLAIMED_A_TURN),
    `claims of ${claimed.filter((size) => size > MOST_CLAIMED_A_TURN).join(', ')} messages`,
  );
  assert.ok(to.delivered > from.delivered, 'deliveries went on');
  // Those started in the gap before the first mark may arrive after it.
  assert.ok(to.delivered - from.delivered <= MOST_DELIVERED_A_SECOND * seconds + 8, `${to.delivered - from.delivered} deliveries in ${seconds} s`);
});

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
  const dispatcher = new WebhookDispatcher(store.webhooks, { plantsCommitted: 0 }, options, pino({ enabled: false }) as unknown as FastifyBaseLogger);
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
