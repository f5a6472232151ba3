import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, postgres, testBackends } from '../helpers/backends.js';
import { createToken, runInProcess, startServer } from '../helpers/processes.js';
import { postgresReachable, POSTGRES_SKIP_REASON } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, createUnderLoad, deliverMarkers, FAST_WEBHOOKS, listWebhooks } from '../helpers/webhooks.js';

/**
 * Attempts that do not time out: an answer later than its attempt's timeout is retried and arrives twice,
 * as at-least-once allows, which a loaded machine's receiver can cause; these tests are about claims.
 */
const UNHURRIED = { ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: '10000' };

/** Runs load across `urls`, then waits until the receiver has every acknowledged plant, and checks that none came twice. */
async function deliveredOnceAcrossProcesses(env: Record<string, string>, receiver: WebhookReceiver, urls: string[], token: string): Promise<void> {
  const load = createUnderLoad(urls, token, 1n);
  // A count, not a time: a loaded machine creates fewer in a given time.
  await until('200 plants are acknowledged', () => load.acknowledged >= 200, 30_000);
  const acknowledged = await load.stop();
  assert.ok(acknowledged.size >= 200, `${acknowledged.size} plants created`);
  await until('every plant is delivered', () => receiver.deliveredByPlant().size === acknowledged.size, 60_000);
  await until('every message is settled', async () => (await listWebhooks(env))[0]?.delivered === acknowledged.size, 30_000);
  // Ids far from the load's: markers that a duplicate still to come would have gone out before.
  await deliverMarkers(urls[0]!, token, receiver, [-1n, -2n]);
  const twice = [...receiver.deliveredByPlant()].filter(([, deliveries]) => deliveries.length > 1);
  assert.deepEqual(twice.map(([id]) => id), [], 'no plant is delivered twice');
  assert.equal(receiver.received.length, acknowledged.size + 2, 'one request a plant');
}

test('serve --workers 2 on one SQLite file: each message is delivered by one worker, once', async (t) => {
  const { sqlite } = await import('../helpers/backends.js');
  const env = { DATABASE_URL: await existingStoreUrl(t, sqlite), ...UNHURRIED };
  const receiver = await WebhookReceiver.start(t);
  receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
  const token = await createToken(env, 'writer');
  const server = await startServer(t, env, ['--workers', '2']);
  await until('two workers listen', () => server.logs.filter((line) => String(line['msg']).startsWith('Server listening at')).length === 2);
  await deliveredOnceAcrossProcesses(env, receiver, [server.url], token);
  assert.equal(await server.stop(), 0);
});

test('postgres: two servers on one database: each message is delivered by one of them, once', { skip: (await postgresReachable()) ? false : POSTGRES_SKIP_REASON }, async (t) => {
  const env = { DATABASE_URL: await existingStoreUrl(t, postgres), ...UNHURRIED };
  const receiver = await WebhookReceiver.start(t);
  receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
  const token = await createToken(env, 'writer');
  const first = await startServer(t, env);
  const second = await startServer(t, env);
  await deliveredOnceAcrossProcesses(env, receiver, [first.url, second.url], token);
  assert.equal(await first.stop(), 0);
  assert.equal(await second.stop(), 0);
});

for (const backend of await testBackends('webhook claims released at a stop')) {
  test(`${backend.name}: a stopping server releases the messages it claimed and did not send: its successor delivers them at once, not after their lease`, async (t) => {
    // A claim's lease is 2 × 20 s + 1 s: a successor that had to wait for it would take 41 s.
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: '20000', SHUTDOWN_GRACE_MS: '2000' };
    const receiver = await WebhookReceiver.start(t);
    const subscription = await addWebhook(env, receiver.url);
    receiver.secrets = [subscription.secret];
    const token = await createToken(env, 'writer');
    assert.equal((await runInProcess(['webhook', 'pause', String(subscription.id)], env)).code, 0);
    const first = await startServer(t, env);
    const load = createUnderLoad([first.url], token, 1n);
    // Enough that the stop comes part way: a few hundred go out before every slot hangs.
    await until('a backlog of 1,000 messages is kept while paused', async () => (await listWebhooks(env))[0]!.pending >= 1000, 60_000);
    const acknowledged = await load.stop();
    // Resumed, the server claims ahead of its free slots (it holds a quarter second's worth).
    assert.equal((await runInProcess(['webhook', 'resume', String(subscription.id)], env)).code, 0);
    await until('deliveries are under way', () => receiver.deliveredByPlant().size >= 300, 30_000);
    // Every slot hangs, so the claimed messages stay held until the stop; the hanging attempts are cut after the grace.
    receiver.answer = () => 'hang';
    const hungAt = receiver.received.length;
    await until('every slot hangs', () => receiver.received.length >= hungAt + 4, 10_000);
    assert.equal(await first.stop(), 0);
    receiver.answer = () => 204;
    const left = acknowledged.size - receiver.deliveredByPlant().size;
    t.diagnostic(`${left} of ${acknowledged.size} messages left at the stop`);
    assert.ok(left > 0, 'the stop came part way through the backlog');
    const started = performance.now();
    await startServer(t, env);
    await until('the successor delivered every plant', () => receiver.deliveredByPlant().size === acknowledged.size, 20_000);
    t.diagnostic(`the rest delivered in ${(performance.now() - started).toFixed(0)} ms`);
    assert.deepEqual(receiver.rejected, []);
  });
}
