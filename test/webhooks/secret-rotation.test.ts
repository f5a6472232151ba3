import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { postPlant } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { type Received, WebhookReceiver } from '../helpers/webhook-receiver.js';
import { endRetiredSecret, plantBody, serverWithWebhook } from '../helpers/webhooks.js';

for (const backend of await testBackends('webhook secret rotation')) {
  test(`${backend.name}: after two rotations deliveries verify with all three secrets; once the first's window ends it no longer signs, and the second still does`, async (t) => {
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend);
    const rotate = async () => {
      const rotated = await runMain(['webhook', 'rotate-secret', String(subscription.id), '--json'], env);
      assert.equal(rotated.code, 0, rotated.stderr);
      return (JSON.parse(rotated.stdout) as { secret: string }).secret;
    };
    const first = subscription.secret;
    const second = await rotate();
    const third = await rotate();
    receiver.secrets = [first, second, third];
    const signedBy = (request: Received) =>
      Object.entries({ first, second, third }).flatMap(([name, secret]) => (WebhookReceiver.signedWith(request, secret) ? [name] : []));

    // The dispatcher reads the secrets when a turn starts and claims in that turn. A plant posted
    // once an earlier one (itself posted after the change) has arrived is claimed by a later turn,
    // so its signatures show the change whatever turn was under way when the change was made.
    const deliver = async (id: bigint): Promise<Received> => {
      assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
      await until(`plant ${id} is delivered`, () => receiver.deliveredByPlant().has(String(id)));
      return receiver.deliveredByPlant().get(String(id))![0]!;
    };

    await deliver(1n);
    const afterRotations = await deliver(2n);
    assert.deepEqual(signedBy(afterRotations), ['first', 'second', 'third'], 'the second rotation does not cut off the first secret');
    assert.equal(afterRotations.signatures.length, 3, 'one signature per live secret');

    await endRetiredSecret(env['DATABASE_URL']!, first);
    await deliver(3n);
    const afterFirstEnded = await deliver(4n);
    assert.deepEqual(signedBy(afterFirstEnded), ['second', 'third'], 'the first secret stops signing once its window ends');
    assert.equal(afterFirstEnded.signatures.length, 2);
    assert.deepEqual(receiver.rejected, []);
  });
}
