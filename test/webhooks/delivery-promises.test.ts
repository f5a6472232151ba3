import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { postPlant, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { listWebhooks, plantBody, serverWithWebhook } from '../helpers/webhooks.js';

/** How long after its attempt began a request may reach the receiver, on a machine running two suites at once. */
const ARRIVAL_LATENCY_MS = 250;

// What docs/webhooks.md promises of an attempt's outcome and timing, each seen
// through a real receiver: a redirect is retried, an attempt ends at
// WEBHOOK_TIMEOUT_MS, retry delays grow, and a lease outlives the longest attempt.

const backends = await testBackends('webhook delivery promises');

for (const backend of backends) {
  test(`${backend.name}: a 3xx answer is not a delivery: the message is retried under its webhook-id`, async (t) => {
    const { env, receiver, token, server } = await serverWithWebhook(t, backend, { answer: ({ attempt }) => (attempt === 1 ? 302 : 204) });
    assert.equal((await postPlant(server.url, token, plantBody(1n))).status, 200);
    await until('the message is settled', async () => (await listWebhooks(env))[0]?.delivered === 1);
    const [attempts, ...others] = [...receiver.attemptsById().values()];
    assert.deepEqual(others, [], 'one message');
    assert.deepEqual(
      attempts!.map((attempt) => attempt.status),
      [302, 204],
    );
  });

  test(`${backend.name}: an attempt to a receiver that never answers ends at WEBHOOK_TIMEOUT_MS, and the message is retried`, async (t) => {
    const timeoutMs = 1000;
    const { receiver, token, server } = await serverWithWebhook(t, backend, {
      settings: { WEBHOOK_TIMEOUT_MS: String(timeoutMs), WEBHOOK_RETRY_MIN_MS: '50', WEBHOOK_RETRY_MAX_MS: '50' },
      answer: ({ attempt }) => (attempt === 1 ? 'hang' : 204),
    });
    assert.equal((await postPlant(server.url, token, plantBody(2n))).status, 200);
    // Bounded well below an attempt that outlived its timeout many times over.
    await until('the second attempt arrives', () => receiver.received.length >= 2, 10 * timeoutMs);
    const [first, second] = receiver.received;
    const gapMs = second!.arrivedAt - first!.arrivedAt;
    // The attempt's clock starts before its request reaches the receiver: on a loaded machine, up to a few hundred ms before.
    assert.ok(gapMs >= timeoutMs - ARRIVAL_LATENCY_MS, `the attempt was cut after ${gapMs.toFixed(0)} ms, before its timeout`);
    // The timeout, the retry's 50 ms, and room for a loaded machine; well before the lease (2 × timeout + 1 s) ends.
    assert.ok(gapMs <= timeoutMs + 1000, `the attempt ended ${gapMs.toFixed(0)} ms after it began, long past its ${timeoutMs} ms timeout`);
  });

  test(`${backend.name}: retry delays grow after each failure, as documented, within their bounds`, async (t) => {
    const [minMs, maxMs, failures] = [50, 400, 4];
    const { receiver, token, server } = await serverWithWebhook(t, backend, {
      settings: { WEBHOOK_RETRY_MIN_MS: String(minMs), WEBHOOK_RETRY_MAX_MS: String(maxMs), WEBHOOK_CONCURRENCY: '16' },
      answer: ({ attempt }) => (attempt <= failures ? 503 : 204),
    });
    const ids = Array.from({ length: 12 }, (_, i) => BigInt(100 + i));
    const answers = await Promise.all(ids.map((id) => postPlant(server.url, token, plantBody(id))));
    assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([200]));
    await until('every plant is delivered', () => receiver.deliveredByPlant().size === ids.length, 30_000);

    // After the n-th failure the delay is drawn from [min, min(max, min × 2^(n-1))] (full jitter).
    const lastGaps: number[] = [];
    for (const [webhookId, attempts] of receiver.attemptsById()) {
      assert.equal(attempts.length, failures + 1, `${webhookId}: ${failures} failures, then the delivery`);
      for (let n = 1; n <= failures; n++) {
        const gapMs = attempts[n]!.arrivedAt - attempts[n - 1]!.arrivedAt;
        const boundMs = Math.min(maxMs, minMs * 2 ** (n - 1));
        assert.ok(gapMs >= minMs - 10, `${webhookId}: ${gapMs.toFixed(0)} ms after failure ${n}, under WEBHOOK_RETRY_MIN_MS`);
        // The bound, plus a poll and room for a loaded machine.
        assert.ok(gapMs <= boundMs + 1000, `${webhookId}: ${gapMs.toFixed(0)} ms after failure ${n}, past its bound of ${boundMs} ms`);
        if (n === failures) lastGaps.push(gapMs);
      }
    }
    // Uniform draws from [50, 400]: all 12 at most 200 ms has a chance of (150/350)^12, under 1 in 25,000.
    // Delays that never grow stay at 50 ms, and so would all of these.
    assert.ok(Math.max(...lastGaps) > 200, `after failure ${failures} the delays were ${lastGaps.map((gap) => gap.toFixed(0)).join(', ')} ms: they did not grow`);
  });

  test(`${backend.name}: with two processes and attempts close to WEBHOOK_TIMEOUT_MS, no message is delivered twice`, async (t) => {
    const timeoutMs = 2000;
    const { env, receiver, token, server } = await serverWithWebhook(t, backend, {
      settings: { WEBHOOK_TIMEOUT_MS: String(timeoutMs) },
      // Every answer comes late in its attempt: a lease shorter than an attempt would let the other process take the message.
      // A quarter of the timeout is left: a loaded machine's answer that came after it would be a retry, not this test's duplicate.
      answer: () => ({ status: 204, afterMs: timeoutMs - 500 }),
    });
    const other = await startServer(t, env);
    const ids = Array.from({ length: 8 }, (_, i) => BigInt(200 + i));
    for (const [i, id] of ids.entries()) assert.equal((await postPlant((i % 2 === 0 ? server : other).url, token, plantBody(id))).status, 200);
    // At least: a message sent twice may be counted twice, which the assertions below then name.
    await until('every message is settled', async () => ((await listWebhooks(env))[0]?.delivered ?? 0) >= ids.length, 30_000);
    // A duplicate attempt would start before its message settled; one more plant's delivery, after, is the marker that all have arrived.
    const sentinel = 999n;
    assert.equal((await postPlant(server.url, token, plantBody(sentinel))).status, 200);
    await until('the sentinel is delivered', () => receiver.deliveredByPlant().has(sentinel.toString()), 30_000);
    for (const [webhookId, attempts] of receiver.attemptsById()) assert.equal(attempts.length, 1, `${webhookId} was attempted ${attempts.length} times`);
    assert.equal(receiver.attemptsById().size, ids.length + 1);
  });
}
