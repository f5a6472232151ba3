// Runs alone: it counts deliveries in every second of a saturating load, which another file's load would take.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCommand, loadGenerator } from '../../bench/load/load-generator.js';
import { metricValue } from '../../bench/service-metrics.js';
import { startReceiver } from '../../bench/webhook-receiver.js';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { createToken, startServer } from '../helpers/processes.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook } from '../helpers/webhooks.js';

/** Seconds of saturating load: every one of them must see deliveries. */
const LOAD_SECONDS = 5;
/**
 * The least deliveries in any second of it. While creates saturate the process, the dispatcher claims
 * every 200 ms and starts 8 attempts every 100 ms: up to 80 a second (72 to 80 measured); one that
 * yielded the event loop to creates, as it once did, made at most 40, and one that started attempts
 * only at its turns would make 40.
 */
const LEAST_PER_SECOND = 55;

for (const backend of await testBackends('webhook deliveries under saturation')) {
  test(`${backend.name}: while creates saturate the server, deliveries go on, at least ${LEAST_PER_SECOND} in every second`, async (t) => {
    if (!requireOrSkip(t, 'wrk is not installed (apt-get install wrk; .ci/run installs it)', hasCommand('wrk'))) return;
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const receiver = await WebhookReceiver.start(t);
    receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    const seen: number[] = [];
    const sampler = setInterval(() => seen.push(receiver.received.length), 1000);
    const load = await loadGenerator.run({ url: server.url, token, connections: 64, seconds: LOAD_SECONDS, idBase: 1 });
    clearInterval(sampler);
    const perSecond = seen.slice(1).map((count, i) => count - seen[i]!);
    t.diagnostic(`${Math.round(load.requestsPerSecond)} creates a second; deliveries in each second of the load: ${perSecond.join(', ')}`);
    assert.equal(load.errors + load.non2xx, 0, 'every create answered 200');
    assert.ok(perSecond.length >= LOAD_SECONDS - 2, `${perSecond.length} whole seconds sampled`);
    assert.ok(perSecond.every((count) => count >= LEAST_PER_SECOND), `deliveries a second: ${perSecond.join(', ')}`);
    assert.deepEqual(receiver.rejected, []);
  });
}

/**
 * Seconds of creates at a fifth of the saturated rate, in which the backlog that saturation left must be
 * delivered. A backlog that is never caught up (deliveries only as fast as creates come) stays whatever
 * this bound; a drain took 7 to 25 s on a slow day with Node.js 24, whose deliveries cost more beside its
 * creates, so the bound leaves it room.
 */
const MODERATE_SECONDS = 60;
/** The oldest pending message's age that says the backlog is gone: the next messages are being delivered as they come. */
const CAUGHT_UP_SECONDS = 1;

for (const backend of await testBackends('a backlog draining beside creates')) {
  test(`${backend.name}: the backlog that saturation left is delivered while creates go on at a fifth of that rate`, async (t) => {
    if (!requireOrSkip(t, 'wrk is not installed (apt-get install wrk; .ci/run installs it)', hasCommand('wrk'))) return;
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    // Its own process, which verifies every signature: a receiver in the test's process would be what limits the pace.
    const receiver = await startReceiver(undefined);
    t.after(() => receiver.close());
    await receiver.useSecret((await addWebhook(env, receiver.url)).secret);
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    const saturated = await loadGenerator.run({ url: server.url, token, connections: 64, seconds: 2, idBase: 1 });
    const backlog = saturated.requests - (await receiver.stats()).received;
    const startedAt = Date.now();
    let caughtUpAfter: number | undefined;
    let oldest = NaN;
    // The load ends once the backlog is gone: the rest of its time would prove nothing more.
    const caughtUp = new AbortController();
    const moderate = loadGenerator.run({
      signal: caughtUp.signal,
      url: server.url,
      token,
      connections: 64,
      seconds: MODERATE_SECONDS,
      idBase: 2 ** 40,
      ratePerSecond: Math.max(1, Math.round(saturated.requestsPerSecond / 5)),
    });
    let running = true;
    void moderate.finally(() => (running = false));
    while (running && caughtUpAfter === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      oldest = (await metricValue(server.url, 'plantstore_webhook_oldest_pending_seconds')) ?? NaN;
      if (oldest < CAUGHT_UP_SECONDS) caughtUpAfter = (Date.now() - startedAt) / 1000;
    }
    caughtUp.abort();
    const paced = await moderate;
    const stats = await receiver.stats();
    t.diagnostic(
      `${Math.round(saturated.requestsPerSecond)} creates a second left ${backlog} messages; beside ${Math.round(paced.requestsPerSecond)} creates a second, ` +
        (caughtUpAfter === undefined ? `the oldest still waited ${oldest.toFixed(1)} s at the end` : `the oldest waited under ${CAUGHT_UP_SECONDS} s after ${caughtUpAfter.toFixed(1)} s`),
    );
    assert.equal(saturated.errors + saturated.non2xx + paced.errors + paced.non2xx, 0, 'every create answered 200');
    assert.ok(caughtUpAfter !== undefined, `after ${MODERATE_SECONDS} s of creates at a fifth of the rate the oldest message still waited ${oldest.toFixed(1)} s`);
    assert.equal(stats.invalid, 0, stats.firstProblem ?? '');
  });
}
