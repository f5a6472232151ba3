import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { until } from '../helpers/until.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { RATE_POLICY_SHAPE } from '../../src/rate-limits/rate-policy.js';

test('token create prints the token alone on stdout, and a running server accepts it', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env);
  const created = await runInProcess(['token', 'create', '--name', 'ci'], env);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /^ps_[A-Za-z0-9_-]{43}\n$/);
  assert.match(created.stderr, /^Created token 1 \(ci\); it does not expire/m);
  const token = created.stdout.trim();
  const response = await postPlant(server.url, token, '{"id":1,"name":"Fern"}');
  assert.equal(response.status, 200);
  assert.ok(!server.logs.some((line) => JSON.stringify(line).includes(token)), 'the token is never logged');
});

test('token list shows every token without the token itself, as a table or JSON', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const first = await createToken(env, 'alpha');
  await createToken(env, 'beta', ['--expires-in', '30d']);
  await runInProcess(['token', 'revoke', 'alpha'], env);

  const table = await runInProcess(['token', 'list'], env);
  assert.equal(table.code, 0);
  const lines = table.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^ID\s+NAME\s+STATUS\s+RATE LIMIT\s+CREATED\s+EXPIRES\s+REVOKED\s+LAST USED$/);
  assert.match(lines[1]!, /^1\s+alpha\s+revoked\s+default\s+\S+Z\s+-\s+\S+Z\s+-$/);
  assert.match(lines[2]!, /^2\s+beta\s+active\s+default\s+\S+Z\s+\S+Z\s+-\s+-$/);
  assert.ok(!table.stdout.includes(first));

  const json = await runInProcess(['token', 'list', '--json'], env);
  const rows = JSON.parse(json.stdout) as { id: number; name: string; status: string; expiresAt: string | null; lastUsedAt: string | null }[];
  assert.deepEqual(rows.map(({ id, name, status, lastUsedAt }) => ({ id, name, status, lastUsedAt })), [
    { id: 1, name: 'alpha', status: 'revoked', lastUsedAt: null },
    { id: 2, name: 'beta', status: 'active', lastUsedAt: null },
  ]);
  const days = (Date.parse(rows[1]!.expiresAt!) - Date.now()) / 86_400_000;
  assert.ok(days > 29.9 && days <= 30, `expires in ${days} days`);
});

test('a token revoked by name or id is refused by a running server within one second', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env);
  const byName = await createToken(env, 'by-name');
  const byId = await createToken(env, 'by-id');
  assert.equal((await postPlant(server.url, byName, '{"id":1,"name":"a"}')).status, 200);
  assert.equal((await postPlant(server.url, byId, '{"id":2,"name":"b"}')).status, 200);

  const revokedByName = await runInProcess(['token', 'revoke', 'by-name'], env);
  assert.equal(revokedByName.code, 0, revokedByName.stderr);
  const named = `plantstore: using the SQLite store ${env.DATABASE_URL.slice('sqlite:'.length)}\n`;
  assert.equal(revokedByName.stderr, `${named}Revoked token 1 (by-name).\n`);
  assert.equal((await runInProcess(['token', 'revoke', '2'], env)).code, 0);
  const revoked = Date.now();

  // TOKEN_CACHE_TTL_MS (500 ms by default, at most 1000) bounds how long a running server still takes a revoked token.
  for (const token of [byName, byId]) {
    await until('the server refuses the revoked token', async () => (await postPlant(server.url, token, '{"id":3,"name":"c"}')).status === 401, 5000);
  }
  assert.ok(Date.now() - revoked < 1500, `refused ${Date.now() - revoked} ms after the revocation, within the cache's second`);
  const response = await postPlant(server.url, byName, '{"id":3,"name":"c"}');
  assert.deepEqual(JSON.parse(response.body), { error: 401, message: 'The bearer token is unknown, revoked or expired', code: 'INVALID_TOKEN' });
  const again = await runInProcess(['token', 'revoke', 'by-name'], env);
  assert.equal(again.code, 1);
  assert.equal(again.stderr, `${named}plantstore: no active token with name "by-name"\n`);
});

test('a token with --expires-in works until it expires, then is refused and listed as expired', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env);
  const lasting = await createToken(env, 'lasting', ['--expires-in', '1h']);
  assert.equal((await postPlant(server.url, lasting, '{"id":1,"name":"a"}')).status, 200);
  const created = Date.now();
  const brief = await createToken(env, 'brief', ['--expires-in', '1s']);
  const listed = JSON.parse((await runInProcess(['token', 'list', '--json'], env)).stdout) as { name: string; expiresAt: string }[];
  const expiresAt = Date.parse(listed.find((row) => row.name === 'brief')!.expiresAt);
  assert.ok(expiresAt > created && expiresAt <= Date.now() + 1000, 'it expires a second after it was made');
  // Every request after the expiry is refused; before it, a loaded machine decides, so that part is not asserted here.
  await until('the expired token is refused', async () => (await postPlant(server.url, brief, '{"id":2,"name":"b"}')).status === 401);
  assert.ok(Date.now() >= expiresAt - 50);
  const list = JSON.parse((await runInProcess(['token', 'list', '--json'], env)).stdout) as { name: string; status: string }[];
  assert.equal(list.find((row) => row.name === 'brief')!.status, 'expired');
  assert.equal(list.find((row) => row.name === 'lasting')!.status, 'active');
});

test('a revoked name can be used again; an active one cannot', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  await createToken(env, 'ci');
  const taken = await runInProcess(['token', 'create', '--name', 'ci'], env);
  assert.equal(taken.code, 1);
  assert.equal(taken.stdout, '');
  assert.equal(taken.stderr, `plantstore: using the SQLite store ${env.DATABASE_URL.slice('sqlite:'.length)}\nplantstore: an active token named "ci" exists; revoke it or choose another name\n`);
  await runInProcess(['token', 'revoke', 'ci'], env);
  await createToken(env, 'ci');
});

test('bad token command lines fail with one line on stderr and exit code 2', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const cases: [string[], string][] = [
    [['token', 'create'], 'plantstore: token create needs --name NAME\n'],
    [['token', 'create', '--name'], "plantstore: Option '--name <value>' argument missing\n"],
    [['token', 'create', '--name', 'ci', '--expires-in', 'soon'], 'plantstore: --expires-in must be a duration such as 90s, 15m, 12h, 30d or 2w, got "soon"\n'],
    [['token', 'create', '--name', 'ci', '--expires-in', '0s'], 'plantstore: --expires-in must be a duration such as 90s, 15m, 12h, 30d or 2w, got "0s"\n'],
    [['token', 'create', '--name', 'ci', '--colour', 'red'], "plantstore: Unknown option '--colour'\n"],
    [['token', 'revoke'], 'plantstore: token revoke needs the ID or NAME of a token\n'],
    [['token', 'revoke', 'a', 'b'], 'plantstore: unexpected argument "b"\n'],
    [['token', 'renew'], 'plantstore: unknown token subcommand "renew"; expected create, list, revoke, rotate or update\n'],
    [['token', 'rotate'], 'plantstore: token rotate needs the NAME of a token\n'],
    [['token', 'rotate', 'ci', '--grace', 'a while'], 'plantstore: --grace must be 0 or a duration such as 90s, 15m, 12h, 30d or 2w, got "a while"\n'],
    [['token', 'rotate', '42'], 'plantstore: token name "42" must start with a letter and hold at most 64 letters, digits, \'.\', \'_\' or \'-\'\n'],
    [['token', 'create', '--name', 'ci', '--rate-limit', 'fast'], `plantstore: --rate-limit must be ${RATE_POLICY_SHAPE}, got "fast"\n`],
    [['token', 'create', '--name', 'ci', '--rate-limit', '0/1m'], `plantstore: --rate-limit must be ${RATE_POLICY_SHAPE}, got "0/1m"\n`],
    [['token', 'update'], 'plantstore: token update needs the NAME of a token\n'],
    [['token', 'update', 'ci'], 'plantstore: token update needs --rate-limit N/DURATION or --no-rate-limit\n'],
    [['token', 'update', 'ci', '--rate-limit', '10/1s', '--no-rate-limit'], 'plantstore: token update takes --rate-limit or --no-rate-limit, not both\n'],
    [['token', 'update', 'ci', '--rate-limit', '10/2d'], `plantstore: --rate-limit must be ${RATE_POLICY_SHAPE}, got "10/2d"\n`],
    [['token', 'update', 'ci', '--rate-limit'], "plantstore: Option '--rate-limit <value>' argument missing\n"],
    [['token', 'list', '--database-url', 'mysql://x'], 'plantstore: --database-url must be a database URL: sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE\n'],
  ];
  for (const [args, stderr] of cases) {
    const result = await runInProcess(args, env);
    assert.equal(result.code, 2, args.join(' '));
    assert.equal(result.stderr, stderr, args.join(' '));
    assert.equal(result.stdout, '', args.join(' '));
  }
  assert.ok(!existsSync(env.DATABASE_URL.slice('sqlite:'.length)), 'a command line used wrongly makes no store');
  // The name is checked before the store is opened: one line, and no store made.
  const badName = await runInProcess(['token', 'create', '--name', '42'], env);
  assert.equal(badName.code, 2);
  assert.equal(badName.stderr, `plantstore: token name "42" must start with a letter and hold at most 64 letters, digits, '.', '_' or '-'\n`);
  assert.ok(!existsSync(env.DATABASE_URL.slice('sqlite:'.length)), 'a bad name makes no store');
});

test('every command has --help, and the top-level help names every command', async () => {
  const commands = [['serve'], ['token'], ['token', 'create'], ['token', 'list'], ['token', 'revoke'], ['token', 'rotate'], ['plants'], ['plants', 'export'], ['copy'], ['config']];
  const top = await runInProcess(['--help']);
  assert.equal(top.code, 0);
  for (const command of commands) {
    assert.match(top.stdout, new RegExp(`^  ${command.join(' ')}\\b`, 'm'), `plantstore --help names ${command.join(' ')}`);
    const result = await runInProcess([...command, '--help']);
    assert.equal(result.code, 0, command.join(' '));
    assert.equal(result.stderr, '', command.join(' '));
    assert.match(result.stdout, new RegExp(`^Usage: plantstore ${command[0]}\\b`), command.join(' '));
  }
});

interface ListedRateLimit {
  id: number;
  name: string;
  status: string;
  rateLimit: string | null;
}

async function rateLimits(env: Record<string, string>): Promise<ListedRateLimit[]> {
  const listed = await runInProcess(['token', 'list', '--json'], env);
  assert.equal(listed.code, 0, listed.stderr);
  return (JSON.parse(listed.stdout) as ListedRateLimit[]).map(({ id, name, status, rateLimit }) => ({ id, name, status, rateLimit }));
}

test('token create --rate-limit gives the token its own policy, shown by token list as text and JSON', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  await createToken(env, 'bulk', ['--rate-limit', '600/1m']);
  await createToken(env, 'plain');
  // Stored as written canonically, so the list shows what servers apply.
  await createToken(env, 'padded', ['--rate-limit', ' 010/30s ']);
  assert.deepEqual(await rateLimits(env), [
    { id: 1, name: 'bulk', status: 'active', rateLimit: '600/1m' },
    { id: 2, name: 'plain', status: 'active', rateLimit: null },
    { id: 3, name: 'padded', status: 'active', rateLimit: '10/30s' },
  ]);
  const lines = (await runInProcess(['token', 'list'], env)).stdout.trimEnd().split('\n');
  assert.match(lines[1]!, /^1\s+bulk\s+active\s+600\/1m\s+\S+Z\s/);
  assert.match(lines[2]!, /^2\s+plain\s+active\s+default\s+\S+Z\s/);
  assert.match(lines[3]!, /^3\s+padded\s+active\s+10\/30s\s+\S+Z\s/);
});

test('token update sets or clears the rate limit of the tokens of a name that still work', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const named = `plantstore: using the SQLite store ${env.DATABASE_URL.slice('sqlite:'.length)}\n`;
  await createToken(env, 'ci');
  await createToken(env, 'other', ['--rate-limit', '5/1s']);
  const set = await runInProcess(['token', 'update', 'ci', '--rate-limit', '100/1h'], env);
  assert.deepEqual(set, {
    code: 0,
    stdout: '',
    stderr: `${named}Token 1 (ci) is now under its own rate limit 100/1h.\nRunning servers apply it within one second.\n`,
  });
  assert.deepEqual((await rateLimits(env)).map((row) => row.rateLimit), ['100/1h', '5/1s']);

  // A retiring token is the same client as the active one: both change.
  const rotated = await runInProcess(['token', 'rotate', 'ci', '--grace', '1h'], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  const cleared = await runInProcess(['token', 'update', 'ci', '--no-rate-limit'], env);
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.deepEqual(cleared.stderr.split('\n').slice(1, -2).sort(), [
    "Token 1 (ci) is now under the server's RATE_LIMIT.",
    "Token 3 (ci) is now under the server's RATE_LIMIT.",
  ]);
  assert.deepEqual(await rateLimits(env), [
    { id: 1, name: 'ci', status: 'retiring', rateLimit: null },
    { id: 2, name: 'other', status: 'active', rateLimit: '5/1s' },
    { id: 3, name: 'ci', status: 'active', rateLimit: null },
  ]);
  assert.match((await runInProcess(['token', 'list'], env)).stdout, /^3\s+ci\s+active\s+default\s/m);

  await runInProcess(['token', 'revoke', 'other'], env);
  for (const name of ['other', 'nobody']) {
    const refused = await runInProcess(['token', 'update', name, '--rate-limit', '1/1s'], env);
    assert.deepEqual(refused, { code: 1, stdout: '', stderr: `${named}plantstore: no active token named "${name}" to update; create one with token create\n` }, name);
  }
  assert.equal((await rateLimits(env))[1]!.rateLimit, '5/1s', 'a revoked token keeps the policy it had');
});

test('token rotate keeps the rate limit; token update --help describes it', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  await createToken(env, 'ci', ['--rate-limit', '30/1s']);
  const rotated = await runInProcess(['token', 'rotate', 'ci', '--grace', '0'], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.deepEqual(await rateLimits(env), [
    { id: 1, name: 'ci', status: 'revoked', rateLimit: '30/1s' },
    { id: 2, name: 'ci', status: 'active', rateLimit: '30/1s' },
  ]);

  const help = await runInProcess(['token', 'update', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: plantstore token update NAME \(--rate-limit N\/DURATION \| --no-rate-limit\)$/m);
  assert.match((await runInProcess(['token', '--help'])).stdout, /<create\|list\|revoke\|rotate\|update>/);
});
