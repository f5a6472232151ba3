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

for (const backend of await testBackends('webhook secret rotation with a grace')) {
  test(`${backend.name}: --grace sets how long the previous secret signs: it verifies during its window and no longer once it ends; --grace 0 stops it at once`, async (t) => {
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend);
    const rotate = async (grace: string) => {
      const rotated = await runMain(['webhook', 'rotate-secret', String(subscription.id), '--grace', grace, '--json'], env);
      assert.equal(rotated.code, 0, rotated.stderr);
      return JSON.parse(rotated.stdout) as { secret: string; previousSecretUntil: string };
    };
    let nextId = 10n;
    // A plant posted after another has arrived is claimed by a later turn, which reads the secrets afresh.
    const deliverAfterATurn = async (): Promise<Received> => {
      for (const id of [nextId, nextId + 1n]) {
        assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
        await until(`plant ${id} is delivered`, () => receiver.deliveredByPlant().has(String(id)));
      }
      nextId += 2n;
      return receiver.deliveredByPlant().get(String(nextId - 1n))![0]!;
    };

    const first = subscription.secret;
    const rotated = await rotate('5s');
    const second = rotated.secret;
    receiver.secrets = [first, second];
    const windowEnds = Date.parse(rotated.previousSecretUntil);
    assert.ok(Math.abs(windowEnds - Date.now() - 5000) < 2000, `the window ends ${rotated.previousSecretUntil}, 5 s after the rotation`);
    const during = await deliverAfterATurn();
    assert.ok(Date.now() < windowEnds, 'two deliveries took the whole window');
    assert.ok(WebhookReceiver.signedWith(during, first) && WebhookReceiver.signedWith(during, second), 'during its window the previous secret signs beside the new one');
    // Bounded: the window's end is a wall-clock time at most 5 s away.
    await until('the window has ended', () => Date.now() > windowEnds, 10_000);
    const after = await deliverAfterATurn();
    assert.ok(!WebhookReceiver.signedWith(after, first), 'once its window ends the previous secret no longer signs');
    assert.ok(WebhookReceiver.signedWith(after, second));
    assert.equal(after.signatures.length, 1);

    const third = (await rotate('0')).secret;
    receiver.secrets = [second, third];
    const afterLeak = await deliverAfterATurn();
    assert.deepEqual([WebhookReceiver.signedWith(afterLeak, second), WebhookReceiver.signedWith(afterLeak, third)], [false, true], '--grace 0: only the new secret signs');
    assert.deepEqual(receiver.rejected, []);
  });
}
