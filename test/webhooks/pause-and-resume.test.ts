import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { postPlant, runInProcess } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, listMessages, listWebhooks, plantBody, serverWithWebhook } from '../helpers/webhooks.js';

/** How many attempts of each message the witness refuses: each retry is one more turn of the dispatcher. */
const WITNESS_REFUSALS = 3;

for (const backend of await testBackends('webhook pause and resume')) {
  test(`${backend.name}: a paused subscription keeps its new messages and is sent none while others are delivered; resume sends them`, async (t) => {
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend);
    // A second subscription, whose receiver refuses each message's first attempts, so the
    // dispatcher must come back for it turn after turn: each turn could have sent the paused
    // subscription's messages too. Its deliveries bound the wait, not a sleep.
    const witness = await WebhookReceiver.start(t);
    const witnessSubscription = await addWebhook(env, witness.url);
    witness.secrets = [witnessSubscription.secret];
    witness.answer = ({ attempt }) => (attempt <= WITNESS_REFUSALS ? 503 : 204);

    const paused = await runInProcess(['webhook', 'pause', String(subscription.id)], env);
    assert.equal(paused.code, 0, paused.stderr);
    assert.deepEqual((await listWebhooks(env)).map((listed) => [listed.id, listed.state]), [[subscription.id, 'paused'], [witnessSubscription.id, 'active']]);
    const ids = [1n, 2n, 3n, 4n, 5n];
    for (const id of ids) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('the witness has every plant, each after its refused attempts', () => witness.deliveredByPlant().size === ids.length);
    assert.ok([...witness.attemptsById().values()].every((attempts) => attempts.length === WITNESS_REFUSALS + 1));

    assert.deepEqual(receiver.received, [], 'nothing sent to the paused subscription in all those turns');
    const held = await listMessages(env, subscription.id);
    assert.deepEqual(
      held.messages.map(({ plantId, status, attempts }) => ({ plantId, status, attempts })),
      ids.map((id) => ({ plantId: Number(id), status: 'pending', attempts: 0 })).reverse(),
      'kept, never attempted',
    );
    let metrics = '';
    // The witness's last delivery is recorded at the deliverer's next turn.
    await until("a paused subscription's backlog is not late", async () => {
      metrics = await (await fetch(`${server.url}/metrics`)).text();
      return /^plantstore_webhook_oldest_pending_seconds 0$/m.test(metrics);
    });
    assert.match(metrics, new RegExp(`^plantstore_webhook_backlog_messages\\{subscription="${subscription.id}"\\} 5$`, 'm'), 'the held backlog is counted');

    const resumed = await runInProcess(['webhook', 'resume', String(subscription.id)], env);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /its 5 pending messages go out/);
    await until('the held plants are delivered', () => receiver.deliveredByPlant().size === ids.length);
    await until('they are settled', async () => (await listWebhooks(env))[0]?.delivered === ids.length);
    const [listed] = await listWebhooks(env);
    assert.deepEqual([listed?.state, listed?.pending], ['active', 0]);
    assert.deepEqual(receiver.rejected, []);
  });
}
