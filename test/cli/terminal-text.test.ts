import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { existingStoreUrl, sqlite, testBackends } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { postPlant, runInProcess } from '../helpers/processes.js';
import { until } from '../helpers/until.js';
import { listWebhooks, plantBody, serverWithWebhook } from '../helpers/webhooks.js';

/** What a hostile receiver answers: set the window title, erase the line, go back to its start, and write a line of its own. */
const HOSTILE_ANSWER = '\x1b]0;pwned\x07\x1b[2K\r\nFAKE: all deliveries OK';

/** A description as an operator might paste it, with a terminal's controls, a C1 CSI and a right-to-left override in it. */
const HOSTILE_DESCRIPTION = 'garden\r\nFAKE: all deliveries OK\x1b[2K\u009b31m\t\u202edecoy\u2066';

/** Anything a terminal would act on, but the newlines that end lines. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function assertInert(output: string, what: string): void {
  assert.doesNotMatch(output, CONTROL, `${what}: no control character reaches the terminal`);
  assert.ok(!output.split('\n').some((line) => line.startsWith('FAKE')), `${what}: no line is faked`);
}

async function open(url: string): Promise<Store> {
  return openStore({ database: parseDatabaseUrl(url, 'test'), databasePoolSize: 1 });
}

for (const backend of await testBackends('terminal text')) {
  test(`${backend.name}: webhook list shows a receiver's answer and a description escaped; --json keeps them exactly`, async (t) => {
    const { env, receiver, subscription, token, server } = await serverWithWebhook(t, backend, { answer: () => 500 });
    receiver.failureBody = HOSTILE_ANSWER;
    const described = await runInProcess(['webhook', 'add', 'http://127.0.0.1:9/described', '--description', HOSTILE_DESCRIPTION], env);
    assert.equal(described.code, 0, described.stderr);
    assert.equal((await postPlant(server.url, token, plantBody(1n))).status, 200);
    await until('the receiver\'s answer is stored as the last error', async () =>
      (await listWebhooks(env)).some((listed) => listed.id === subscription.id && listed.lastError?.includes('FAKE') === true),
    );

    const table = await runInProcess(['webhook', 'list'], env);
    assert.equal(table.code, 0, table.stderr);
    assertInert(table.stdout, 'webhook list');
    const lines = table.stdout.split('\n');
    assert.equal(lines.length, 4, 'a header and one line a subscription');
    const failing = lines.find((line) => line.startsWith(`${subscription.id} `));
    assert.ok(failing?.includes(String.raw`HTTP 500: \x1b]0;pwned\x07\x1b[2K FAKE: all deliveries OK`), failing);
    assert.ok(table.stdout.includes(String.raw`garden\r\nFAKE: all deliveries OK\x1b[2K\x9b31m\t\u202edecoy\u2066`), table.stdout);

    const json = await runInProcess(['webhook', 'list', '--json'], env);
    assert.doesNotMatch(json.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/, 'JSON escapes every control');
    const rows = JSON.parse(json.stdout) as { id: number; description: string | null; lastError: string | null }[];
    // The service stores the answer with its runs of white space made one space; the rest as the receiver wrote it.
    assert.equal(rows.find((row) => row.id === subscription.id)?.lastError, 'HTTP 500: \x1b]0;pwned\x07\x1b[2K FAKE: all deliveries OK');
    assert.equal(rows.find((row) => row.description !== null)?.description, HOSTILE_DESCRIPTION);
  });
}

test('token names from a copied store, a command\'s failure line, plant names in an export and in copy conflicts are shown inert', async (t) => {
  const url = await existingStoreUrl(t, sqlite);
  const store = await open(url);
  // A name the CLI would refuse, as a store written by another tool or an older build may hold.
  const name = 'ci\x1b]0;pwned\x07\u202eevil\nFAKE';
  await store.insertToken({ name, hash: 'a'.repeat(64), createdAt: new Date(), expiresAt: null });
  const plantName = 'Fern\u009b2J\x1b[2K\u202eknabmo';
  await store.createPlants([{ id: 1n, name: plantName }]);
  await store.close();

  const listed = await runMain(['token', 'list'], { DATABASE_URL: url });
  assert.equal(listed.code, 0, listed.stderr);
  assertInert(listed.stdout, 'token list');
  assert.ok(listed.stdout.includes(String.raw`ci\x1b]0;pwned\x07\u202eevil\nFAKE`), listed.stdout);
  const json = await runMain(['token', 'list', '--json'], { DATABASE_URL: url });
  assertInert(json.stdout, 'token list --json');
  assert.equal((JSON.parse(json.stdout) as { name: string }[])[0]!.name, name);

  const revoked = await runMain(['token', 'revoke', '1'], { DATABASE_URL: url });
  assert.equal(revoked.code, 0, revoked.stderr);
  assertInert(revoked.stderr, 'token revoke');
  assert.match(revoked.stderr, /Revoked token 1 \(ci\\x1b\]0;pwned\\x07\\u202eevil\\nFAKE\)\.\n$/);
  const failed = await runMain(['token', 'revoke', 'x\u202eevil'], { DATABASE_URL: url });
  assert.equal(failed.code, 1);
  assertInert(failed.stderr, 'a failure line');
  assert.match(failed.stderr, /no active token with name "x\\u202eevil"/);

  const exported = await runMain(['plants', 'export'], { DATABASE_URL: url });
  assert.equal(exported.code, 0, exported.stderr);
  assertInert(exported.stdout, 'plants export');
  assert.equal((JSON.parse(exported.stdout) as { name: string }).name, plantName, 'the export parses to the name as stored');

  const target = await existingStoreUrl(t, sqlite);
  const other = await open(target);
  await other.createPlants([{ id: 1n, name: 'another plant' }]);
  await other.close();
  const copied = await runMain(['copy', '--from', url, '--to', target], {});
  assert.equal(copied.code, 1, copied.stderr);
  assert.match(copied.stderr, /copy: conflict: source \{"id":1,"name":"Fern\\u009b2J\\u001b\[2K\\u202eknabmo"\}/);
  assertInert(copied.stderr, 'copy conflicts');
});
