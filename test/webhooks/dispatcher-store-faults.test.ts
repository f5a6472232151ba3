import assert from 'node:assert/strict';
import { setTimeout } from 'node:timers/promises';
import { test, type TestContext } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { ServiceError } from '../../src/errors.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import type { DeliverySpans } from '../../src/tracing/delivery-spans.js';
import { addSubscription } from '../../src/webhooks/subscriptions.js';
import { type DispatcherOptions, WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { sqlite } from '../helpers/backends.js';
import { until, within } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// The dispatcher on a real store and a real receiver, with faults put in
// front of the store's calls (a store that cannot be reached) and of an
// attempt (a defect that throws): what it has seen must not be lost, and
// what it has delivered must not be sent again.

const TURN_FAILED = 'the webhook dispatcher could not reach the store; it tries again';
/** A lease is 2 × the timeout + 1 s: a settlement lost would let the message be sent again 3 s after its claim. */
const OPTIONS: DispatcherOptions = { timeoutMs: 1000, retryMinMs: 50, retryMaxMs: 200, retryForMs: 60_000, concurrency: 4, retentionMs: 3_600_000, pollMs: 50 };

interface Setup {
  store: Store;
  receiver: WebhookReceiver;
  subscriptionId: number;
  /** What the dispatcher logged, each line parsed. */
  logs: Record<string, unknown>[];
  start(spans?: DeliverySpans, options?: Partial<DispatcherOptions>): void;
}

async function setUp(t: TestContext): Promise<Setup> {
  const store = await openStore({ database: parseDatabaseUrl(await sqlite.freshUrl(t), 'test') });
  const receiver = await WebhookReceiver.start(t);
  const added = await addSubscription(store.webhooks, receiver.url, 'faults');
  assert.ok(added.added);
  receiver.secrets = [added.subscription.secret];
  const logs: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  let dispatcher: WebhookDispatcher | undefined;
  t.after(async () => {
    // Bounded: a slot that is never freed would keep the stop waiting for it.
    if (dispatcher !== undefined) await within('the dispatcher stops', dispatcher.stop(1000), 10_000);
    await store.close();
  });
  return {
    store,
    receiver,
    subscriptionId: added.subscription.id,
    logs,
    start(spans, options) {
      dispatcher = new WebhookDispatcher(store.webhooks, { ...OPTIONS, ...options }, log as unknown as FastifyBaseLogger, undefined, spans);
      dispatcher.start();
    },
  };
}

const unreachable = () => new ServiceError('STORE_UNAVAILABLE', { cause: new Error('the test took the store away') });

async function deliveredCount(store: Store): Promise<number> {
  return (await store.webhooks.listSubscriptions())[0]!.delivered;
}

test('claims and settlements that fail are logged and tried again: the message is delivered once and recorded as delivered', async (t) => {
  const { store, receiver, logs, start } = await setUp(t);
  const faults = { claims: 1, settlements: 2 };
  // Claims in flight at once: a turn that ended while its claim went on would let the next turn claim beside it.
  let claiming = 0;
  let mostClaiming = 0;
  // Told when a claim starts beside another: what a turn that ended before its claim lets happen.
  const { promise: claimBeside, resolve: claimedBeside } = Promise.withResolvers<void>();
  const claimMessages = store.webhooks.claimMessages.bind(store.webhooks);
  store.webhooks.claimMessages = async (claim) => {
    if (faults.claims > 0) {
      faults.claims -= 1;
      throw unreachable();
    }
    claiming += 1;
    mostClaiming = Math.max(mostClaiming, claiming);
    if (claiming > 1) claimedBeside();
    try {
      // While a settlement fails beside it, the claim lasts until another claim starts, or 1.5 s: far longer
      // than the poll after a failed turn, however late a loaded machine runs that poll's timer.
      if (faults.settlements < 2 && faults.settlements > 0) await Promise.race([claimBeside, setTimeout(1500)]);
      return await claimMessages(claim);
    } finally {
      claiming -= 1;
    }
  };
  const settleMessages = store.webhooks.settleMessages.bind(store.webhooks);
  store.webhooks.settleMessages = async (owner, settlements) => {
    if (faults.settlements > 0) {
      faults.settlements -= 1;
      throw unreachable();
    }
    return settleMessages(owner, settlements);
  };
  start();

  assert.deepEqual(await store.createPlants([{ id: 9007199254740993n, name: 'through faults' }]), [{ outcome: 'created' }]);
  await until('the message is recorded as delivered', async () => (await deliveredCount(store)) === 1);
  assert.deepEqual(faults, { claims: 0, settlements: 0 }, 'every fault was met');
  assert.equal(receiver.received.length, 1, 'one attempt: the outcome kept through the failed settlements was recorded, not sent again');
  assert.equal(receiver.received[0]!.plantId, '9007199254740993');
  assert.equal(mostClaiming, 1, 'a turn lasts until its claim is over, even when its settlement failed');
  const failed = logs.filter((line) => line['msg'] === TURN_FAILED);
  assert.equal(failed.length, 3, 'each failed turn is logged');
  for (const line of failed) {
    assert.equal(line['level'], 50);
    assert.match(JSON.stringify(line['err']), /STORE_UNAVAILABLE|cannot take/);
  }
  const [message] = await store.webhooks.listMessages({ subscriptionId: 1, limit: 10 });
  assert.equal(message?.state, 'delivered');
  assert.equal(message?.attempts, 1);
});

test('an attempt that throws is recorded as a failed attempt and retried, and its slot is freed', async (t) => {
  const { store, receiver, logs, start } = await setUp(t);
  let starts = 0;
  const spans = {
    start() {
      starts += 1;
      if (starts === 1) throw new Error('a defect in the attempt');
      return { end: () => undefined };
    },
  } as unknown as DeliverySpans;
  // One slot: a slot the throw kept would hold back every later message.
  start(spans, { concurrency: 1 });

  await store.createPlants([{ id: 1n, name: 'first' }]);
  await until('the first message is delivered', async () => (await deliveredCount(store)) === 1);
  await store.createPlants([{ id: 2n, name: 'second' }]);
  await until('the second message is delivered', async () => (await deliveredCount(store)) === 2);

  assert.deepEqual(
    receiver.received.map((received) => received.plantId),
    ['1', '2'],
    'the attempt that threw sent nothing; its retry and the next message were sent',
  );
  const retried = logs.find((line) => line['msg'] === 'webhook delivery failed; it will be retried');
  assert.equal(retried?.['error'], 'a defect in the attempt');
  assert.equal(retried?.['attempt'], 1);
  const messages = await store.webhooks.listMessages({ subscriptionId: 1, limit: 10 });
  assert.deepEqual(
    messages.map((message) => [message.plantId, message.state, message.attempts]).sort((a, b) => Number(a[0]) - Number(b[0])),
    [
      [1n, 'delivered', 2],
      [2n, 'delivered', 1],
    ],
  );
});
