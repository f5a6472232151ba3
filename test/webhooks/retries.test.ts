import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, deliverMarkers, FAST_WEBHOOKS, listWebhooks, plantBody, serverWithWebhook } from '../helpers/webhooks.js';

const backends = await testBackends('webhook retries');

for (const backend of backends) {
  test(`${backend.name}: with the receiver down, then up, every plant arrives, each message under one webhook-id`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS };
    const receiver = await WebhookReceiver.start(t);
    receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
    await receiver.close();
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    const ids = Array.from({ length: 30 }, (_, i) => 9007199254740993n + BigInt(i));
    const answers = await Promise.all(ids.map((id) => postPlant(server.url, token, plantBody(id))));
    assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([200]));
    await until('webhook list shows the subscription failing', async () => {
      const [listed] = await listWebhooks(env);
      return listed?.state === 'failing' && listed.pending === ids.length && listed.lastError !== null;
    });
    // The store can show the failure before its log line has come through the server's stdout.
    await until('each failed attempt is logged with the subscription and the next attempt', () =>
      server.logs.some((line) => line['msg'] === 'webhook delivery failed; it will be retried' && line['subscriptionId'] === 1 && typeof line['nextAttemptAt'] === 'string'),
    );
    await receiver.listen();
    await until('every plant is delivered', () => receiver.deliveredByPlant().size === ids.length);
    await until('nothing is pending', async () => (await listWebhooks(env))[0]?.pending === 0);
    const byPlant = receiver.deliveredByPlant();
    for (const id of ids) assert.equal(byPlant.get(id.toString())?.length, 1, `plant ${id} delivered once`);
    assert.equal(new Set(receiver.received.map((request) => request.webhookId)).size, ids.length);
    const [listed] = await listWebhooks(env);
    assert.equal(listed?.state, 'active');
    assert.equal(listed?.delivered, ids.length);
  });

  test(`${backend.name}: a receiver that fails one request in four gets every plant once, retries under the same webhook-id`, async (t) => {
    let requests = 0;
    const { env, receiver, token, server } = await serverWithWebhook(t, backend, { answer: () => (++requests % 4 === 0 ? 503 : 200) });
    const ids = Array.from({ length: 60 }, (_, i) => -9007199254740993n - BigInt(i));
    for (let i = 0; i < ids.length; i += 10) {
      const answers = await Promise.all(ids.slice(i, i + 10).map((id) => postPlant(server.url, token, plantBody(id))));
      assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([200]));
    }
    await until('every plant is delivered', () => receiver.deliveredByPlant().size === ids.length);
    await until('every message is settled', async () => (await listWebhooks(env))[0]?.delivered === ids.length);
    assert.deepEqual(receiver.rejected, []);
    const failedRequests = receiver.received.filter((request) => request.status === 503);
    // Every fourth request failed, and each failure cost one more request: no more, no fewer.
    assert.equal(failedRequests.length, Math.floor(receiver.received.length / 4));
    assert.equal(receiver.received.length, ids.length + failedRequests.length, 'each failure retried once more, each plant delivered once');
    for (const [id, attempts] of receiver.attemptsById()) {
      assert.equal(new Set(attempts.map((attempt) => attempt.plantId)).size, 1, `${id} carries one plant`);
      assert.equal(attempts.filter((attempt) => attempt.status === 200).length, 1, `${id} is delivered once`);
      assert.equal(new Set(attempts.map((attempt) => attempt.body)).size, 1, `${id} has the same body on every attempt`);
    }
    assert.equal(receiver.attemptsById().size, ids.length, 'one webhook-id a plant');
  });

  test(`${backend.name}: a message that runs out of retries is marked failed, counted, logged, and in the metrics`, async (t) => {
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend, { settings: { WEBHOOK_RETRY_FOR_MS: '1500' }, answer: () => 500 });
    for (const id of [1n, 2n, 3n]) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('the three messages are failed', async () => {
      const [listed] = await listWebhooks(env);
      return listed?.failed === 3 && listed.pending === 0;
    });
    const [listed] = await listWebhooks(env);
    assert.equal(listed?.delivered, 0);
    assert.equal(listed?.state, 'failing');
    assert.match(listed?.lastError ?? '', /^HTTP 500/);
    const attempts = receiver.attemptsById();
    assert.equal(attempts.size, 3);
    for (const tries of attempts.values()) assert.ok(tries.length >= 2, 'retried before failing');
    // The deliverer tells serve of its attempts every half second.
    let metrics = '';
    await until('serve counts the three failures', async () => {
      metrics = await (await fetch(`${server.url}/metrics`)).text();
      return /^plantstore_webhook_deliveries_total\{outcome="failed"\} 3$/m.test(metrics);
    });
    assert.match(metrics, /^plantstore_webhook_deliveries_total\{outcome="retry"\} \d+$/m);
    assert.match(metrics, /^plantstore_webhook_backlog_messages\{subscription="1"\} 0$/m);
    assert.match(metrics, /^plantstore_webhook_oldest_pending_seconds 0$/m);
    // After the stop every line the server wrote has been read.
    assert.equal(await server.stop(), 0);
    const failedLines = server.logs.filter((line) => line['msg'] === 'webhook delivery failed for good: out of retries');
    assert.equal(failedLines.length, 3);
    assert.ok(failedLines.every((line) => line['subscriptionId'] === subscription.id && /^HTTP 500/.test(String(line['error']))));
    const key = subscription.secret.slice('whsec_'.length);
    assert.ok(!server.logs.some((line) => JSON.stringify(line).includes(key)), 'the secret is never logged');
  });

  test(`${backend.name}: the metrics show the backlog and the age of the oldest pending message while a receiver is down`, async (t) => {
    const { receiver, token, server } = await serverWithWebhook(t, backend, { answer: () => 503 });
    for (const id of [1n, 2n]) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('an attempt failed', () => receiver.received.length >= 2);
    let metrics = '';
    const age = () => Number(/^plantstore_webhook_oldest_pending_seconds (\S+)$/m.exec(metrics)?.[1]);
    await until('the oldest pending message is a second old', async () => {
      metrics = await (await fetch(`${server.url}/metrics`)).text();
      return age() >= 1;
    });
    assert.match(metrics, /^plantstore_webhook_backlog_messages\{subscription="1"\} 2$/m);
    assert.ok(age() < 60, `oldest pending ${age()} s`);
    receiver.answer = () => 200;
    await until('both are delivered', () => receiver.deliveredByPlant().size === 2);
    await until('the latency is observed', async () =>
      /^plantstore_webhook_delivery_latency_seconds_count 2$/m.test(await (await fetch(`${server.url}/metrics`)).text()),
    );
  });

  test(`${backend.name}: remove stops deliveries at once and drops the pending messages`, async (t) => {
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend, { answer: () => 500 });
    for (const id of [1n, 2n, 3n, 4n, 5n]) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('attempts are failing', () => receiver.received.length >= 10);
    const removed = await runInProcess(['webhook', 'remove', String(subscription.id)], env);
    assert.equal(removed.code, 0, removed.stderr);
    // Attempts already in flight may still arrive; none starts after that. The marker: a second
    // subscription, added after the removal, receives two plants created one after the other.
    const atRemoval = receiver.received.length;
    const witness = await WebhookReceiver.start(t);
    witness.secrets = [(await addWebhook(env, witness.url)).secret];
    assert.equal((await postPlant(server.url, token, plantBody(6n))).status, 200);
    await until('plant 6 reaches the new subscription', () => witness.deliveredByPlant().has('6'));
    await deliverMarkers(server.url, token, witness, [7n, 8n]);
    const after = receiver.received.slice(atRemoval);
    assert.ok(after.length <= 4, `${after.length} arrived after the removal (WEBHOOK_CONCURRENCY is 4: only those in flight)`);
    assert.deepEqual(after.filter((request) => Number(request.plantId) >= 6), [], 'no plant created after the removal reaches it');
    assert.ok(after.every((request) => Number(request.plantId) <= 5));
    assert.deepEqual((await listWebhooks(env)).map((listed) => listed.url), [witness.url]);
    const again = await runInProcess(['webhook', 'remove', String(subscription.id)], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no webhook subscription with id 1/);
  });

  test(`${backend.name}: after rotate-secret deliveries carry both signatures, so a receiver can switch secrets without losing one`, async (t) => {
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend);
    assert.equal((await postPlant(server.url, token, plantBody(1n))).status, 200);
    await until('plant 1 is delivered', () => receiver.deliveredByPlant().has('1'));
    assert.equal(receiver.received[0]?.signatures.length, 1);

    const rotated = await runInProcess(['webhook', 'rotate-secret', String(subscription.id), '--json'], env);
    assert.equal(rotated.code, 0, rotated.stderr);
    const { secret } = JSON.parse(rotated.stdout) as { secret: string };
    assert.notEqual(secret, subscription.secret);
    assert.match(secret, /^whsec_/);
    // The receiver still knows only the old secret: the next delivery verifies with it.
    assert.equal((await postPlant(server.url, token, plantBody(2n))).status, 200);
    await until('plant 2 is delivered', () => receiver.deliveredByPlant().has('2'));
    const second = receiver.deliveredByPlant().get('2')![0]!;
    assert.equal(second.signatures.length, 2, 'signed with both secrets');
    assert.equal(second.verifiedSignatures, 1);
    // The receiver switches to the new secret alone: still verified.
    receiver.secrets = [secret];
    assert.equal((await postPlant(server.url, token, plantBody(3n))).status, 200);
    await until('plant 3 is delivered', () => receiver.deliveredByPlant().has('3'));
    assert.equal(receiver.deliveredByPlant().get('3')![0]!.verifiedSignatures, 1);
    receiver.secrets = [subscription.secret, secret];
    assert.equal((await postPlant(server.url, token, plantBody(4n))).status, 200);
    await until('plant 4 is delivered', () => receiver.deliveredByPlant().has('4'));
    assert.equal(receiver.deliveredByPlant().get('4')![0]!.verifiedSignatures, 2, 'one signature for each secret');
    assert.deepEqual(receiver.rejected, []);
  });
}
