import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { createToken, postPlant, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, FAST_WEBHOOKS, listWebhooks, outboxRows, plantBody } from '../helpers/webhooks.js';

const backends = await testBackends('webhook pruning and create latency');

for (const backend of backends) {
  test(`${backend.name}: delivered and failed messages are pruned after the retention time, pending ones are kept`, async (t) => {
    const databaseUrl = await existingStoreUrl(t, backend);
    const env = { DATABASE_URL: databaseUrl, ...FAST_WEBHOOKS, WEBHOOK_RETENTION_MS: '300', WEBHOOK_RETRY_FOR_MS: '300' };
    const healthy = await WebhookReceiver.start(t);
    healthy.secrets = [(await addWebhook(env, healthy.url)).secret];
    const failing = await WebhookReceiver.start(t);
    failing.secrets = [(await addWebhook(env, failing.url)).secret];
    failing.answer = () => 500;
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    for (const id of [1n, 2n, 3n, 4n]) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('the healthy receiver has every plant', () => healthy.deliveredByPlant().size === 4);
    await until('the failing subscription has failed them all', async () => (await listWebhooks(env))[1]?.failed === 4);
    await until('the outbox is empty again', async () => (await outboxRows(databaseUrl)) === 0);
    // The counts outlive the messages.
    const listed = await listWebhooks(env);
    assert.deepEqual(listed.map((subscription) => [subscription.delivered, subscription.failed, subscription.pending]), [[4, 0, 0], [0, 4, 0]]);
    // A pending message is not pruned, however old.
    await failing.close();
    const stuck = await WebhookReceiver.start(t);
    stuck.answer = () => 503;
    await server.stop();
    const slow = { ...env, WEBHOOK_RETRY_FOR_MS: '600000', WEBHOOK_RETRY_MIN_MS: '100', WEBHOOK_RETRY_MAX_MS: '100' };
    stuck.secrets = [(await addWebhook(slow, stuck.url)).secret];
    const again = await startServer(t, slow);
    assert.equal((await postPlant(again.url, token, plantBody(5n))).status, 200);
    await until('the pending message was tried a few times', () => stuck.received.length >= 3);
    assert.ok((await outboxRows(databaseUrl)) >= 1, 'the pending message is kept');
  });

  test(`${backend.name}: a receiver that never answers does not slow creates`, async (t) => {
    // Attempts may hang for 20 s: a create that waited on one would show it.
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: '20000', SHUTDOWN_GRACE_MS: '500' };
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    const timed = async (id: bigint) => {
      const started = performance.now();
      const answer = await postPlant(server.url, token, plantBody(id));
      assert.equal(answer.status, 200);
      return performance.now() - started;
    };
    const measure = async (from: bigint) => {
      const times: number[] = [];
      for (let i = 0n; i < 10n; i++) times.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => timed(from + i * 10n + BigInt(j))))));
      return times.sort((a, b) => a - b);
    };
    const without = await measure(1_000n);

    const receiver = await WebhookReceiver.start(t);
    receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
    receiver.answer = () => 'hang';
    for (const id of [1n, 2n, 3n, 4n, 5n]) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('the receiver holds WEBHOOK_CONCURRENCY attempts', () => receiver.received.length === 4);
    const hanging = await measure(2_000n);
    assert.equal(receiver.received.length, 4, 'every slot is held by a hanging attempt');
    const [listed] = await listWebhooks(env);
    assert.equal(listed?.pending, 105);

    const p90 = (times: number[]) => times[Math.floor(times.length * 0.9)]!;
    // The same work both times; only a create waiting on a delivery would take seconds.
    assert.ok(hanging.at(-1)! < 2000, `the slowest create took ${hanging.at(-1)!.toFixed(1)} ms`);
    assert.ok(p90(hanging) < p90(without) * 3 + 50, `p90 ${p90(hanging).toFixed(1)} ms with a hanging receiver, ${p90(without).toFixed(1)} ms without`);
    // Nor does it hold a stop past the grace period: the attempts are cut and left for later.
    const stopping = performance.now();
    assert.equal(await server.stop(), 0);
    assert.ok(performance.now() - stopping < 10_000, `stopped in ${(performance.now() - stopping).toFixed(0)} ms`);
    assert.equal((await listWebhooks(env))[0]?.pending, 105, 'the cut attempts stay pending');
  });

  test(`${backend.name}: a subscription whose receiver hangs does not hold back the others`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: '20000' };
    const hanging = await WebhookReceiver.start(t);
    hanging.secrets = [(await addWebhook(env, hanging.url)).secret];
    hanging.answer = () => 'hang';
    const healthy = await WebhookReceiver.start(t);
    healthy.secrets = [(await addWebhook(env, healthy.url)).secret];
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    const ids = Array.from({ length: 40 }, (_, i) => BigInt(i + 1));
    for (const id of ids) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    // Well within the hanging receiver's 20 s timeout: nothing waits for it.
    await until('the healthy receiver has every plant', () => healthy.deliveredByPlant().size === ids.length, 10_000);
    assert.equal(hanging.received.length, 4, 'the hanging receiver holds its own WEBHOOK_CONCURRENCY slots, no more');
  });
}
