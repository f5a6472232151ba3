import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { assertMatches, openApiFile } from '../helpers/openapi.js';
import { createToken, postPlant, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, deliverMarkers, FAST_WEBHOOKS, listWebhooks, plantBody } from '../helpers/webhooks.js';

const backends = await testBackends('webhook delivery');

for (const backend of backends) {
  test(`${backend.name}: every plant reaches a healthy receiver exactly once, signed, with its exact id; a replay sends nothing`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS };
    const receiver = await WebhookReceiver.start(t);
    const subscription = await addWebhook(env, receiver.url);
    assert.match(subscription.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    const keyBytes = Buffer.from(subscription.secret.slice('whsec_'.length), 'base64').length;
    assert.ok(keyBytes >= 24 && keyBytes <= 64, `a key of ${keyBytes} bytes`);
    receiver.secrets = [subscription.secret];
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);

    // Beyond 2^53, negative, the extremes of int64, with and without a tag.
    const ids = [9007199254740993n, -9007199254740993n, 9223372036854775807n, -9223372036854775808n, 0n];
    for (let i = 1n; i <= 45n; i++) ids.push(9007199254740993n + i * 2n);
    const answers = await Promise.all(ids.map((id, i) => postPlant(server.url, token, plantBody(id, `plant ${i}`, i % 2 === 0 ? 'tagged' : undefined))));
    assert.deepEqual(answers.map((answer) => answer.status), ids.map(() => 200));
    // Replays of acknowledged plants: 200 again, and no second message.
    const replays = await Promise.all(ids.slice(0, 10).map((id, i) => postPlant(server.url, token, plantBody(id, `plant ${i}`, i % 2 === 0 ? 'tagged' : undefined))));
    assert.deepEqual(replays.map((answer) => answer.status), replays.map(() => 200));

    await until('every plant is delivered', () => receiver.deliveredByPlant().size === ids.length);
    await until('the subscription counts them all', async () => (await listWebhooks(env))[0]?.delivered === ids.length);
    // Nothing more comes: two markers delivered after, and the count is the plants' and theirs.
    const markers = [1n, 2n] as const;
    await deliverMarkers(server.url, token, receiver, markers);
    assert.deepEqual(receiver.rejected, []);
    assert.equal(receiver.received.length, ids.length + markers.length, 'one request a plant, no more');
    const byPlant = receiver.deliveredByPlant();
    ids.forEach((id, i) => {
      const [delivered] = byPlant.get(id.toString()) ?? [];
      assert.ok(delivered, `plant ${id} delivered`);
      assert.equal(delivered.type, 'plant.created');
      assertMatches(openApiFile.components.schemas.PlantCreatedEvent, JSON.parse(delivered.body), 'the delivered body');
      assert.equal(delivered.verifiedSignatures, 1);
      assert.match(delivered.webhookId, /^msg_/);
      assert.match(delivered.body, new RegExp(`^\\{"type":"plant\\.created","timestamp":"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z","data":\\{"id":${id},`));
      assert.equal(delivered.data['name'], `plant ${i}`);
      assert.equal(delivered.data['tag'], i % 2 === 0 ? 'tagged' : undefined);
      assert.equal('tag' in delivered.data, i % 2 === 0, 'tag absent when the plant has none');
    });
    assert.equal(new Set(receiver.received.map((request) => request.webhookId)).size, ids.length + markers.length, 'one webhook-id a message');
    const [listed] = await listWebhooks(env);
    assert.equal(listed?.pending, 0);
    assert.equal(listed?.failed, 0);
    assert.equal(listed?.state, 'active');
    assert.equal(await server.stop(), 0);
  });

  test(`${backend.name}: a subscription receives only the plants created after it was added`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS };
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    assert.equal((await postPlant(server.url, token, plantBody(1n))).status, 200);
    const receiver = await WebhookReceiver.start(t);
    receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
    assert.equal((await postPlant(server.url, token, plantBody(2n))).status, 200);
    await until('plant 2 is delivered', () => receiver.deliveredByPlant().has('2'));
    await deliverMarkers(server.url, token, receiver, [3n, 4n]);
    assert.deepEqual([...receiver.deliveredByPlant().keys()], ['2', '3', '4']);
  });
}
