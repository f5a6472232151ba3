import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { postPlant, runInProcess } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, listWebhooks, plantBody, serverWithWebhook } from '../helpers/webhooks.js';

for (const backend of await testBackends('webhook update')) {
  test(`${backend.name}: webhook update moves a subscription to another URL: its pending messages go there, under the same webhook-ids and secret`, async (t) => {
    const { env, receiver: old, subscription, token, server } = await serverWithWebhook(t, backend, { answer: () => 503 });
    const moved = await WebhookReceiver.start(t);
    moved.secrets = [subscription.secret];
    for (const id of [1n, 2n]) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('the old URL has refused both messages', () => old.attemptsById().size === 2);

    const updated = await runInProcess(['webhook', 'update', String(subscription.id), '--url', moved.url, '--description', 'moved'], env);
    assert.equal(updated.code, 0, updated.stderr);
    assert.ok(updated.stderr.includes(`now delivers to ${moved.url}`), updated.stderr);
    await until('the pending messages arrive at the new URL', () => moved.deliveredByPlant().size === 2);
    assert.deepEqual(new Set(moved.attemptsById().keys()), new Set(old.attemptsById().keys()), 'the same webhook-ids');
    assert.equal((await postPlant(server.url, token, plantBody(3n))).status, 200);
    await until('a new plant goes to the new URL', () => moved.deliveredByPlant().has('3'));
    assert.deepEqual(moved.rejected, [], 'signed with the secret the receiver had');
    const [listed] = await listWebhooks(env);
    assert.deepEqual([listed?.url, (listed as unknown as { description: string }).description], [moved.url, 'moved']);

    const other = await addWebhook(env, 'http://127.0.0.1:9/other');
    const duplicate = await runInProcess(['webhook', 'update', String(subscription.id), '--url', 'http://127.0.0.1:9/other'], env);
    assert.equal(duplicate.code, 1);
    assert.equal(duplicate.stderr.split('\n').slice(1).join('\n'), `plantstore: webhook subscription ${other.id} already delivers to this URL; --allow-duplicate moves it there anyway\n`);
    assert.equal((await listWebhooks(env))[0]?.url, moved.url, 'nothing changed');
    const allowed = await runInProcess(['webhook', 'update', String(subscription.id), '--url', 'http://127.0.0.1:9/other', '--allow-duplicate'], env);
    assert.equal(allowed.code, 0, allowed.stderr);

    const invalid = await runInProcess(['webhook', 'update', String(subscription.id), '--url', 'https://user:secret@example.com/'], env);
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /without credentials/);
    assert.ok(!invalid.stderr.includes('secret@'), 'credentials are not echoed');
  });
}
