import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { runInProcess } from '../helpers/processes.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, listMessages, outboxRows } from '../helpers/webhooks.js';

for (const backend of await testBackends('webhook ping')) {
  test(`${backend.name}: webhook ping posts a webhook.ping signed as deliveries are, straight to the receiver, and exits 1 unless it answers 2xx`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const receiver = await WebhookReceiver.start(t);
    const subscription = await addWebhook(env, receiver.url);
    receiver.secrets = [subscription.secret];
    const ping = () => runInProcess(['webhook', 'ping', String(subscription.id)], env);

    const pinged = await ping();
    assert.equal(pinged.code, 0, pinged.stderr);
    assert.match(pinged.stdout, /^HTTP 204 in \d+ ms\n$/);
    assert.deepEqual(receiver.rejected, [], 'its headers, content type, timestamp and signature verify as Standard Webhooks asks');
    const [first] = receiver.received;
    assert.equal(first?.type, 'webhook.ping');
    assert.deepEqual(first?.data, {});
    assert.equal(first?.verifiedSignatures, 1);
    assert.ok(first!.webhookId.startsWith(`msg_`) && /_ping[0-9a-f]{16}$/.test(first!.webhookId), first?.webhookId);
    assert.ok(pinged.stderr.includes(first!.webhookId), 'the command names the ping it sent');
    assert.equal(await outboxRows(env.DATABASE_URL), 0, 'not written to the outbox');
    assert.deepEqual((await listMessages(env, subscription.id)).messages, []);

    // After a rotation a ping carries a signature per live secret, as deliveries do.
    const rotated = await runInProcess(['webhook', 'rotate-secret', String(subscription.id), '--json'], env);
    const { secret } = JSON.parse(rotated.stdout) as { secret: string };
    assert.equal((await ping()).code, 0);
    const second = receiver.received[1]!;
    assert.equal(second.signatures.length, 2);
    assert.ok(WebhookReceiver.signedWith(second, secret) && WebhookReceiver.signedWith(second, subscription.secret));
    assert.notEqual(second.webhookId, first!.webhookId, 'a new id each time: a receiver that deduplicates answers every ping');

    assert.equal((await runInProcess(['webhook', 'pause', String(subscription.id)], env)).code, 0);
    assert.equal((await ping()).code, 0, 'a paused subscription is pinged too');

    receiver.answer = () => 503;
    receiver.failureBody = 'no\u001b]0;pwned\u0007';
    const refused = await ping();
    assert.equal(refused.code, 1);
    assert.match(refused.stdout, /^HTTP 503: no\\x1b\]0;pwned\\x07 in \d+ ms\n$/, "the receiver's answer, escaped");
    assert.match(refused.stderr, /did not accept the ping/);

    await receiver.close();
    const down = await ping();
    assert.equal(down.code, 1);
    assert.match(down.stdout, /^ECONNREFUSED in \d+ ms\n$/);
    assert.equal(receiver.received.length, 4, 'one request a ping, never retried');

    const unknown = await runInProcess(['webhook', 'ping', '42'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no webhook subscription with id 42/);
  });
}
