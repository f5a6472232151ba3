import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { postPlant, runInProcess } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { listMessages, listWebhooks, plantBody, serverWithWebhook } from '../helpers/webhooks.js';

for (const backend of await testBackends('webhook resend')) {
  test(`${backend.name}: messages that failed while the receiver was down go out after resend --failed, under the same webhook-id, with every retry again`, async (t) => {
    let down = true;
    /** The webhook-ids whose first attempt after the resend was refused. */
    const refusedOnce = new Set<string>();
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend, {
      // Short, so that the messages fail soon, and so that after a resend, long after their plants'
      // commit (the failure, then the CLI runs below: over a second), a failed attempt is retried only
      // if the retry window starts again at the resend. Two suites at once on two cores can hold the
      // first attempt back for over a second, which must still come within the window.
      settings: { WEBHOOK_RETRY_FOR_MS: '2000' },
      answer: ({ webhookId }) => {
        if (down) return 503;
        if (refusedOnce.has(webhookId)) return 204;
        refusedOnce.add(webhookId);
        return 503;
      },
    });
    receiver.failureBody = 'down for maintenance\u001b[2J';
    const ids = [9007199254740993n, 2n, 3n];
    for (const id of ids) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    await until('the three messages are failed', async () => {
      const [listed] = await listWebhooks(env);
      return listed?.failed === 3 && listed.pending === 0;
    });

    const failed = await listMessages(env, subscription.id);
    assert.deepEqual(
      failed.messages.map(({ status, nextAttemptAt, lastResult }) => ({ status, nextAttemptAt, lastResult })),
      Array(3).fill({ status: 'failed', nextAttemptAt: null, lastResult: 'HTTP 503: down for maintenance\u001b[2J' }),
    );
    assert.ok(failed.messages.every((message) => message.attempts >= 2), 'retried before failing');
    assert.deepEqual(new Set(failed.messages.map((message) => message.id)), new Set(receiver.attemptsById().keys()), 'the webhook-ids the receiver saw');
    assert.deepEqual(failed.messages.map((message) => message.plantId), [3, 2, 9007199254740993], 'newest first');
    assert.match(failed.stdout, /"plantId":9007199254740993,/, 'the plant id with every digit');
    const table = await runInProcess(['webhook', 'messages', String(subscription.id), '--status', 'failed'], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^MESSAGE ID\s+PLANT ID\s+STATUS\s+ATTEMPTS\s+NEXT ATTEMPT\s+LAST RESULT\n/);
    assert.match(table.stdout, /\nmsg_\S+_\d+\s+9007199254740993\s+failed\s+\d+\s+-\s+HTTP 503: down for maintenance\\x1b\[2J\n$/);
    assert.ok(!table.stdout.includes('\u001b'), "the receiver's escape sequence is shown, not obeyed");

    down = false;
    const resent = await runInProcess(['webhook', 'resend', String(subscription.id), '--failed'], env);
    assert.equal(resent.code, 0, resent.stderr);
    assert.equal(resent.stdout, 'queued: 3\n');
    await until('every plant is delivered', () => receiver.deliveredByPlant().size === ids.length);
    await until('every message is settled', async () => (await listWebhooks(env))[0]?.delivered === ids.length);
    for (const [id, attempts] of receiver.attemptsById()) {
      assert.equal(attempts.filter((attempt) => attempt.status === 204).length, 1, `${id} delivered once, under the id of its failed attempts`);
    }
    assert.equal(receiver.attemptsById().size, ids.length, 'no new webhook-id');
    const [listed] = await listWebhooks(env);
    assert.deepEqual([listed?.pending, listed?.delivered, listed?.failed], [0, 3, 0], 'counted by their latest outcome');
    const delivered = await listMessages(env, subscription.id, ['--status', 'delivered']);
    assert.deepEqual(
      delivered.messages.map(({ attempts, lastResult }) => ({ attempts, lastResult })),
      Array(3).fill({ attempts: 2, lastResult: 'HTTP 204' }),
      'attempts counted from the resend: one refused, one delivered',
    );

    // One delivered message, named by its webhook-id, goes again under it.
    const again = delivered.messages[0]!.id!;
    const one = await runInProcess(['webhook', 'resend', again], env);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(one.stdout, 'queued: 1\n');
    await until(`${again} is delivered a second time`, () => receiver.attemptsById().get(again)!.filter((attempt) => attempt.status === 204).length === 2);
    assert.equal(receiver.attemptsById().size, ids.length);
    assert.deepEqual(receiver.rejected, []);
  });
}
