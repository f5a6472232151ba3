import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existingStoreUrl, sqlite, testBackends } from '../helpers/backends.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

interface ListedToken {
  id: number;
  name: string;
  status: string;
  revokedAt: string | null;
  expiresAt: string | null;
}

async function listTokens(env: Record<string, string>): Promise<ListedToken[]> {
  const listed = await runInProcess(['token', 'list', '--json'], env);
  assert.equal(listed.code, 0, listed.stderr);
  return JSON.parse(listed.stdout) as ListedToken[];
}

/** `token rotate NAME [args]`: asserts it succeeds, prints the new token alone, and says until when the old one works. */
async function rotate(env: Record<string, string>, name: string, args: readonly string[]): Promise<{ token: string; oldWorksUntil: number }> {
  const rotated = await runInProcess(['token', 'rotate', name, ...args], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, /^ps_[A-Za-z0-9_-]{43}\n$/);
  // After the line that names the store.
  const match = /^Token \d+ \(\S+\) works until (\S+Z), then is revoked\.\nCreated token \d+ \(\S+\); it does not expire\. Store it now/m.exec(rotated.stderr);
  assert.ok(match !== null, rotated.stderr);
  return { token: rotated.stdout.trim(), oldWorksUntil: Date.parse(match[1]!) };
}

let id = 0;
const plant = () => `{"id":${++id},"name":"Fern"}`;

for (const backend of await testBackends('token rotate')) {
  test(`${backend.name}: after token rotate both tokens work through the grace, the old one listed as retiring; revoke NAME ends both`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const server = await startServer(t, env);
    const old = await createToken(env, 'ci');
    assert.equal((await postPlant(server.url, old, plant())).status, 200);

    const rotatedAt = Date.now();
    const { token: next, oldWorksUntil } = await rotate(env, 'ci', ['--grace', '1h']);
    assert.ok(Math.abs(oldWorksUntil - (rotatedAt + 3_600_000)) < 60_000, `the old token works until ${new Date(oldWorksUntil).toISOString()}`);
    assert.equal((await postPlant(server.url, next, plant())).status, 200, 'the new token works at once');
    assert.equal((await postPlant(server.url, old, plant())).status, 200, 'and the old one still does');

    const rows = await listTokens(env);
    assert.deepEqual(rows.map(({ id, name, status }) => ({ id, name, status })), [
      { id: 1, name: 'ci', status: 'retiring' },
      { id: 2, name: 'ci', status: 'active' },
    ]);
    assert.equal(Date.parse(rows[0]!.revokedAt!), oldWorksUntil);
    assert.match((await runInProcess(['token', 'list'], env)).stdout, /^1\s+ci\s+retiring\s/m);
    assert.equal((await runInProcess(['token', 'create', '--name', 'ci'], env)).code, 1, 'the new token holds the name');

    const revoked = await runInProcess(['token', 'revoke', 'ci'], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.deepEqual(revoked.stderr.trimEnd().split('\n').slice(1).sort(), ['Revoked token 1 (ci).', 'Revoked token 2 (ci).']);
    for (const token of [old, next]) {
      await until('the server refuses the revoked token', async () => (await postPlant(server.url, token, plant())).status === 401, 5000);
    }
    assert.deepEqual((await listTokens(env)).map((row) => row.status), ['revoked', 'revoked']);
  });

  test(`${backend.name}: once a rotation's grace ends the old token is refused, not before, and the new one goes on working`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const server = await startServer(t, env);
    const old = await createToken(env, 'ci');
    // In use, so that the server remembers it: the memory must not outlive the grace.
    assert.equal((await postPlant(server.url, old, plant())).status, 200);
    const { token: next, oldWorksUntil } = await rotate(env, 'ci', ['--grace', '2s']);

    let refusedAt = 0;
    await until(
      'the server refuses the old token',
      async () => {
        const status = (await postPlant(server.url, old, plant())).status;
        if (status === 401) refusedAt = Date.now();
        else assert.equal(status, 200);
        return status === 401;
      },
      15_000,
    );
    assert.ok(refusedAt >= oldWorksUntil, `refused ${oldWorksUntil - refusedAt} ms before the grace ended`);
    // As a revocation: TOKEN_CACHE_TTL_MS (500 ms) bounds how long a server takes to learn of it.
    assert.ok(refusedAt - oldWorksUntil < 1500, `refused ${refusedAt - oldWorksUntil} ms after the grace ended`);
    assert.equal((await postPlant(server.url, next, plant())).status, 200);
    assert.deepEqual((await listTokens(env)).map((row) => row.status), ['revoked', 'active']);
  });
}

test('token rotate --grace 0 stops the old token at once; the new one keeps the lifetime the old was made with', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  await createToken(env, 'ci', ['--expires-in', '30d']);
  const rotated = await runInProcess(['token', 'rotate', 'ci', '--grace', '0'], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stderr, /^Revoked token 1 \(ci\)\.\nCreated token 2 \(ci\); it expires \S+Z\./m);
  const rows = await listTokens(env);
  assert.deepEqual(rows.map((row) => row.status), ['revoked', 'active']);
  const days = (Date.parse(rows[1]!.expiresAt!) - Date.now()) / 86_400_000;
  assert.ok(days > 29.9 && days <= 30, `expires in ${days} days`);

  const shorter = await runInProcess(['token', 'rotate', 'ci', '--grace', '0', '--expires-in', '1h'], env);
  assert.equal(shorter.code, 0, shorter.stderr);
  const hours = (Date.parse((await listTokens(env))[2]!.expiresAt!) - Date.now()) / 3_600_000;
  assert.ok(hours > 0.99 && hours <= 1, `expires in ${hours} hours`);
});

test('token rotate of a name with no active token fails and changes nothing', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  await createToken(env, 'gone');
  await runInProcess(['token', 'revoke', 'gone'], env);
  for (const name of ['gone', 'never']) {
    const rotated = await runInProcess(['token', 'rotate', name], env);
    assert.equal(rotated.code, 1);
    assert.equal(rotated.stdout, '');
    assert.equal(rotated.stderr.split('\n').slice(1).join('\n'), `plantstore: no active token named "${name}" to rotate; create one with token create\n`);
  }
  assert.equal((await listTokens(env)).length, 1);
});

test('token create --replace revokes the active token of that name and a running server refuses it; without a token of the name it simply creates', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env);
  const first = await runInProcess(['token', 'create', '--name', 'ci', '--replace'], env);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stderr, /^Created token 1 \(ci\)/m);
  const old = first.stdout.trim();
  assert.equal((await postPlant(server.url, old, plant())).status, 200);

  const second = await runInProcess(['token', 'create', '--name', 'ci', '--replace'], env);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /^ps_[A-Za-z0-9_-]{43}\n$/);
  assert.match(second.stderr, /^Revoked token 1 \(ci\)\.\nCreated token 2 \(ci\); it does not expire\./m);
  assert.equal((await postPlant(server.url, second.stdout.trim(), plant())).status, 200);
  await until('the server refuses the replaced token', async () => (await postPlant(server.url, old, plant())).status === 401, 5000);
});
