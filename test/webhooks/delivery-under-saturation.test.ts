import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCommand, loadGenerator } from '../../bench/load/load-generator.js';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { createToken, startServer } from '../helpers/processes.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook } from '../helpers/webhooks.js';

/** Seconds of saturating load: every one of them must see deliveries. */
const LOAD_SECONDS = 5;
/**
 * The least deliveries in any second of it. The dispatcher keeps 8 attempts in flight while creates
 * saturate the process (hundreds a second on the slowest machine measured); one that yielded the
 * event loop to creates, as it once did, made at most 40.
 */
const LEAST_PER_SECOND = 100;

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
