import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { DELIVERER_NICENESS } from '../../src/cli/deliverer-process.js';
import { existingStoreUrl, sqlite, testBackends } from '../helpers/backends.js';
import { runInProcess, createToken, postPlant, startDeliverer, startServer, type ServerProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until } from '../helpers/until.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { addWebhook, createUnderLoad, delivererStarted, FAST_WEBHOOKS, listWebhooks, plantBody } from '../helpers/webhooks.js';

/** The live child processes of `pid`, with their command lines. */
function childrenOf(pid: number): { pid: number; command: string[] }[] {
  return readdirSync(`/proc/${pid}/task`)
    .flatMap((task) => readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number))
    .map((child) => ({ pid: child, command: readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').filter(Boolean) }));
}

function deliverersOf(server: ServerProcess): number[] {
  return childrenOf(server.child.pid!)
    .filter(({ command }) => command.at(-1) === 'deliver')
    .map(({ pid }) => pid);
}

/** A process's nice value, field 19 of /proc/PID/stat. */
function niceness(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function metricsOf(url: string): Promise<string> {
  const response = await fetch(`${url}/metrics`);
  assert.equal(response.status, 200);
  return response.text();
}

for (const backend of await testBackends('deliverers apart from serve')) {
  test(`${backend.name}: with WEBHOOK_DELIVERY=off serve sends nothing; a plantstore deliver apart delivers every plant, answers /healthz, /readyz and /metrics, and stops with exit 0`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS };
    const receiver = await WebhookReceiver.start(t);
    receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
    const token = await createToken(env, 'writer');
    const server = await startServer(t, { ...env, WEBHOOK_DELIVERY: 'off' });
    assert.deepEqual(deliverersOf(server), [], 'serve started no deliverer');
    const ids = [1n, 2n, 3n, 2n ** 63n - 1n];
    for (const id of ids) assert.equal((await postPlant(server.url, token, plantBody(id))).status, 200);
    // Several polls' worth: a serve that delivered would have by now.
    await until('the messages are pending', async () => (await listWebhooks(env))[0]?.pending === ids.length);
    await new Promise((resolve) => setTimeout(resolve, 4 * Number(FAST_WEBHOOKS.WEBHOOK_POLL_MS)));
    assert.equal(receiver.received.length, 0, 'nothing delivered without a deliverer');

    const deliverer = await startDeliverer(t, env);
    await until('every plant is delivered', () => receiver.deliveredByPlant().size === ids.length);
    assert.deepEqual([...receiver.deliveredByPlant().keys()].sort(), ids.map(String).sort());
    for (const path of ['/healthz', '/readyz']) {
      const response = await fetch(`${deliverer.url}${path}`);
      assert.equal(response.status, 200, path);
      assert.deepEqual(await response.json(), { status: 'ok' });
    }
    const missing = await fetch(`${deliverer.url}/plants`, { method: 'POST' });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { code: string }).code, 'NOT_FOUND');
    await until('the deliveries are counted', async () => /^plantstore_webhook_deliveries_total\{outcome="delivered"\} 4$/m.test(await metricsOf(deliverer.url)));
    // Recorded a turn after the receiver answered.
    await until('no message is pending', async () => /^plantstore_webhook_oldest_pending_seconds 0$/m.test(await metricsOf(deliverer.url)));
    assert.equal(await deliverer.stop(), 0);
    assert.ok(deliverer.logs.some((line) => line['msg'] === 'stopped delivering webhooks'));
    assert.equal(await server.stop(), 0);
  });

  test(`${backend.name}: deliverers killed with SIGKILL under load lose nothing: what they held goes out from another once its lease ends`, async (t) => {
    // A claim's lease is 2 × 500 ms + 1 s.
    const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_CONCURRENCY: '8' };
    const receiver = await WebhookReceiver.start(t);
    receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
    // Slow enough that each deliverer holds messages in flight when it is killed.
    receiver.answer = () => ({ status: 204, afterMs: 20 });
    const token = await createToken(env, 'writer');
    const server = await startServer(t, { ...env, WEBHOOK_DELIVERY: 'off' });
    const deliverers = [await startDeliverer(t, env), await startDeliverer(t, env)];
    const load = createUnderLoad([server.url], token, 1n);
    for (let kill = 0; kill < 4; kill++) {
      const victim = kill % 2;
      const from = receiver.received.length;
      await until('the deliverers are delivering', () => receiver.received.length >= from + 20, 30_000);
      assert.equal(await deliverers[victim]!.stop('SIGKILL'), null);
      deliverers[victim] = await startDeliverer(t, env);
    }
    const acknowledged = await load.stop();
    await until('every acknowledged plant is delivered', () => [...acknowledged].every((id) => receiver.deliveredByPlant().has(id)), 60_000);
    const duplicates = receiver.received.length - receiver.deliveredByPlant().size;
    t.diagnostic(`${acknowledged.size} plants, 4 kills, ${duplicates} deliveries of a plant already delivered`);
    assert.deepEqual(receiver.rejected, []);
  });
}

test('serve --workers 2 starts one deliverer, at a lower priority, whose attempts every worker counts; it stops with serve', async (t) => {
  const env = { DATABASE_URL: await existingStoreUrl(t, sqlite), ...FAST_WEBHOOKS };
  const receiver = await WebhookReceiver.start(t);
  receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
  const token = await createToken(env, 'writer');
  const server = await startServer(t, env, ['--workers', '2']);
  await delivererStarted(server);
  const deliverers = deliverersOf(server);
  assert.equal(deliverers.length, 1, `${deliverers.length} deliverers`);
  // Lowered once it has told serve it started: below the servers, as far as DELIVERER_NICENESS says.
  await until('the deliverer runs at a lower priority than serve', () => niceness(deliverers[0]!) > niceness(server.child.pid!));
  assert.equal(niceness(deliverers[0]!), Math.min(19, niceness(server.child.pid!) + DELIVERER_NICENESS));
  assert.equal((await postPlant(server.url, token, plantBody(7n))).status, 200);
  await until('the plant is delivered', () => receiver.deliveredByPlant().has('7'));
  // Each scrape is answered by one worker or the other: both count the delivery.
  for (let scrape = 0; scrape < 6; scrape++) {
    await until('the delivery is counted', async () => /^plantstore_webhook_deliveries_total\{outcome="delivered"\} 1$/m.test(await metricsOf(server.url)));
  }
  assert.equal(await server.stop(), 0);
  assert.ok(!alive(deliverers[0]!));
  assert.ok(server.logs.some((line) => line['msg'] === 'stopped delivering webhooks'));
});

test('a killed deliverer is started again by its serve; a killed serve takes its deliverer with it', async (t) => {
  const env = { DATABASE_URL: await existingStoreUrl(t, sqlite), ...FAST_WEBHOOKS };
  const receiver = await WebhookReceiver.start(t);
  receiver.secrets = [(await addWebhook(env, receiver.url)).secret];
  const token = await createToken(env, 'writer');
  const server = await startServer(t, env);
  await delivererStarted(server);
  const [first] = deliverersOf(server);
  process.kill(first!, 'SIGKILL');
  await until('another deliverer is started', () => deliverersOf(server).some((pid) => pid !== first), 10_000);
  assert.ok(server.logs.some((line) => line['msg'] === 'the webhook deliverer exited; starting another' && line['signal'] === 'SIGKILL'));
  assert.equal((await postPlant(server.url, token, plantBody(7n))).status, 200);
  await until('the new deliverer delivers', () => receiver.deliveredByPlant().has('7'));

  const [second] = deliverersOf(server);
  assert.equal(await server.stop('SIGKILL'), null);
  await until('the deliverer of a killed serve exits', () => !alive(second!), 15_000);
  // It stopped as on SIGTERM, not by a crash.
  assert.ok(server.logs.some((line) => line['msg'] === 'stopped delivering webhooks' && line['pid'] === second), 'the deliverer stopped cleanly');
});

test('plantstore deliver refuses a store that does not exist, and makes none', async (t) => {
  const dir = tempDir(t);
  const result = await runInProcess(['deliver'], { DATABASE_URL: `sqlite:${dir}/missing.db` });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /^plantstore: the SQLite store .*missing\.db does not exist .*`plantstore serve` or `plantstore token create` makes one\n$/);
  assert.deepEqual(readdirSync(dir), []);
});
