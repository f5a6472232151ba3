import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { existingStoreUrl, testBackends } from '../helpers/backends.js';
import { createToken, runInProcess, startServer } from '../helpers/processes.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, createUnderLoad, FAST_WEBHOOKS, listWebhooks } from '../helpers/webhooks.js';

/** Replay a failure with PLANTSTORE_WEBHOOK_CRASH_SEED=<the seed printed by the failing run>. */
const SEED = Number(process.env['PLANTSTORE_WEBHOOK_CRASH_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const KILLS = 4;

/** Every stored plant's id, from `plantstore plants export`. */
async function storedIds(env: Record<string, string>): Promise<Set<string>> {
  const exported = await runInProcess(['plants', 'export'], env);
  assert.equal(exported.code, 0, exported.stderr);
  return new Set(exported.stdout.trimEnd().split('\n').filter(Boolean).map((line) => /^\{"id":(-?\d+)/.exec(line)![1]!));
}

for (const backend of await testBackends('webhooks across kill -9')) {
  test(`${backend.name}: kill -9 at random moments under load, then a restart: every acknowledged plant is delivered, and only stored plants (seed ${SEED})`, async (t) => {
    t.diagnostic(`seed ${SEED} (replay with PLANTSTORE_WEBHOOK_CRASH_SEED=${SEED})`);
    const next = seededRandom(SEED);
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS };
    const receiver = await WebhookReceiver.start(t);
    receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
    const token = await createToken(env, 'writer');
    const acknowledged = new Set<string>();
    for (let kill = 0; kill < KILLS; kill++) {
      const server = await startServer(t, env);
      const load = createUnderLoad([server.url], token, 2n ** 53n + BigInt(kill) * 1_000_000n);
      await sleep(100 + Math.floor(next() * 500));
      server.child.kill('SIGKILL');
      for (const id of await load.stop()) acknowledged.add(id);
      await server.stop('SIGKILL');
    }
    t.diagnostic(`${acknowledged.size} plants acknowledged across ${KILLS} kills; ${receiver.deliveredByPlant().size} delivered before the restart`);
    assert.ok(acknowledged.size > 0);
    await startServer(t, env);
    await until(
      'every acknowledged plant is delivered',
      () => {
        const delivered = receiver.deliveredByPlant();
        return [...acknowledged].every((id) => delivered.has(id));
      },
      60_000,
    );
    await until('nothing is pending', async () => (await listWebhooks(env))[0]?.pending === 0, 30_000);
    // No notification for a plant that was never committed.
    const stored = await storedIds(env);
    for (const id of receiver.deliveredByPlant().keys()) assert.ok(stored.has(id), `plant ${id} was delivered and is stored`);
    assert.equal(receiver.deliveredByPlant().size, stored.size, 'every stored plant, acknowledged or not, is delivered');
    assert.deepEqual(receiver.rejected, []);
  });
}

