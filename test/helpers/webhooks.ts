import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { type Backend, existingStoreUrl } from './backends.js';
import { createToken, postPlant, runInProcess, type ServerProcess, startServer } from './processes.js';
import { until } from './until.js';
import { WebhookReceiver } from './webhook-receiver.js';

/** Settings that make retries, leases and pruning take milliseconds, so that tests finish fast. */
export const FAST_WEBHOOKS = {
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_MIN_MS: '50',
  WEBHOOK_RETRY_MAX_MS: '200',
  WEBHOOK_POLL_MS: '50',
  // The attempts a hanging receiver holds are counted against it.
  WEBHOOK_CONCURRENCY: '4',
};

/** `plantstore webhook add URL --json`, in this process: asserts it succeeds and resolves the subscription's id and secret. */
export async function addWebhook(env: Record<string, string>, url: string): Promise<{ id: number; url: string; secret: string }> {
  const added = await runInProcess(['webhook', 'add', url, '--json'], env);
  assert.equal(added.code, 0, added.stderr);
  return JSON.parse(added.stdout) as { id: number; url: string; secret: string };
}

/**
 * A server on a fresh store of `backend`, with FAST_WEBHOOKS (and `settings`), one subscription to a
 * receiver of the test's own that verifies its secret and answers `answer`, and a token to create with.
 */
export async function serverWithWebhook(
  t: TestContext,
  backend: Backend,
  { settings = {}, answer }: { settings?: Record<string, string>; answer?: WebhookReceiver['answer'] } = {},
): Promise<{ env: Record<string, string>; receiver: WebhookReceiver; subscription: { id: number; secret: string }; token: string; server: ServerProcess }> {
  const env = { DATABASE_URL: await existingStoreUrl(t, backend), ...FAST_WEBHOOKS, ...settings };
  const receiver = await WebhookReceiver.start(t);
  const token = await createToken(env, 'writer');
  const subscription = await addWebhook(env, receiver.url);
  receiver.secrets = [subscription.secret];
  if (answer !== undefined) receiver.answer = answer;
  const server = await startServer(t, env);
  await delivererStarted(server);
  return { env, receiver, subscription, token, server };
}

/** Waits for the start line of the deliverer `serve` started beside itself: its deliveries begin from there. */
export async function delivererStarted(server: ServerProcess): Promise<void> {
  await until('the deliverer serve started says it delivers', () => server.logs.some((line) => line['msg'] === 'plantstore delivering webhooks'), 20_000);
}

export interface ListedSubscription {
  id: number;
  url: string;
  state: string;
  pending: number;
  delivered: number;
  failed: number;
  lastError: string | null;
}

/** `plantstore webhook list --json`, in this process. */
export async function listWebhooks(env: Record<string, string>): Promise<ListedSubscription[]> {
  const listed = await runInProcess(['webhook', 'list', '--json'], env);
  assert.equal(listed.code, 0, listed.stderr);
  return JSON.parse(listed.stdout) as ListedSubscription[];
}

export interface ListedMessage {
  id: string | null;
  plantId: number;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  finishedAt: string | null;
  lastResult: string | null;
}

/** `plantstore webhook messages ID --json [args]`, in this process; plant ids beyond 2^53 lose digits here: read `stdout` for those. */
export async function listMessages(env: Record<string, string>, subscriptionId: number, args: readonly string[] = []): Promise<{ messages: ListedMessage[]; stdout: string }> {
  const listed = await runInProcess(['webhook', 'messages', String(subscriptionId), '--json', ...args], env);
  assert.equal(listed.code, 0, listed.stderr);
  return { messages: JSON.parse(listed.stdout) as ListedMessage[], stdout: listed.stdout };
}

/** A plant's JSON body with an exact id. */
export function plantBody(id: bigint, name = `plant ${id}`, tag?: string): string {
  return `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;
}

/** How many messages the outbox holds, read straight from the database. */
export async function outboxRows(databaseUrl: string): Promise<number> {
  // On both stores a batch of creates writes its messages packed, one row a subscription (see the migrations).
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      const sql = 'SELECT (SELECT count(*) FROM webhook_messages) + (SELECT coalesce(sum(plants), 0) FROM webhook_batches) AS count';
      return (db.prepare(sql).get() as { count: number }).count;
    } finally {
      db.close();
    }
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const sql = 'SELECT (SELECT count(*) FROM webhook_messages) + (SELECT coalesce(sum(cardinality(plant_ids)), 0) FROM webhook_batches) AS count';
    const { rows } = await client.query<{ count: string }>(sql);
    return Number(rows[0]!.count);
  } finally {
    await client.end();
  }
}

/**
 * Ends a retired secret's window now, as time would: its stored end is moved
 * an hour into the past, in the database the server uses.
 */
export async function endRetiredSecret(databaseUrl: string, secret: string): Promise<void> {
  const past = Date.now() - 3_600_000;
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(databaseUrl.slice('sqlite:'.length), { timeout: 5000 });
    try {
      const { changes } = db.prepare('UPDATE webhook_retired_secrets SET valid_until = ? WHERE secret = ?').run(past, secret);
      assert.equal(changes, 1, 'one retired secret ended');
    } finally {
      db.close();
    }
    return;
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('UPDATE webhook_retired_secrets SET valid_until = $1 WHERE secret = $2', [new Date(past), secret]);
    assert.equal(rowCount, 1, 'one retired secret ended');
  } finally {
    await client.end();
  }
}

/**
 * `clients` loops that post new plants (ids from `firstId` up) to `urls` in
 * turn until `stop` is called; resolves, after stop, the ids answered 200.
 * A request cut by a killed server is not acknowledged and not an error.
 */
export function createUnderLoad(urls: readonly string[], token: string, firstId: bigint, clients = 8): { readonly acknowledged: number; stop(): Promise<Set<string>> } {
  const acknowledged = new Set<string>();
  let running = true;
  let next = firstId;
  const loops = Array.from({ length: clients }, async (_, client) => {
    let turn = client;
    while (running) {
      const id = next++;
      const url = urls[turn++ % urls.length]!;
      try {
        const response = await fetch(`${url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: plantBody(id),
          signal: AbortSignal.timeout(10_000),
        });
        await response.text();
        if (response.status === 200) acknowledged.add(id.toString());
      } catch {
        if (running) await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
  });
  return {
    /** How many creates were answered 200 so far. */
    get acknowledged() {
      return acknowledged.size;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
      return acknowledged;
    },
  };
}

/**
 * Proves that nothing more is on its way to `receiver`, with no sleep: two
 * marker plants, `ids`, created one after the other, each once the one before
 * was delivered. The second is claimed by a dispatcher turn that began after
 * the first was delivered, so a message still due to be sent (a duplicate, a
 * retry, a plant that should not be sent) went out before it; a test then
 * asserts that the receiver has nothing beyond what it expected and the markers.
 */
export async function deliverMarkers(serverUrl: string, token: string, receiver: WebhookReceiver, ids: readonly [bigint, bigint]): Promise<void> {
  for (const id of ids) {
    assert.equal((await postPlant(serverUrl, token, plantBody(id, 'marker'))).status, 200);
    await until(`marker plant ${id} is delivered`, () => receiver.deliveredByPlant().has(id.toString()));
  }
}
