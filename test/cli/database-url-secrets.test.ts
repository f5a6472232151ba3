import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { runInProcess, startServer } from '../helpers/processes.js';

const SECRETS = /hunter2|keypass/;

/** DATABASE_URL for `database` with passwords everywhere one goes: the user part (one with an @ in it) and the query. */
function withPasswords(database: URL): string {
  return `postgres://${database.username}:p@hunter2@${database.host}${database.pathname}?password=hunter2&sslpassword=keypass&sslmode=disable`;
}

test('plantstore config shows DATABASE_URL with every password masked, as text and as JSON', async () => {
  const env = { DATABASE_URL: withPasswords(new URL('postgres://app@db.internal:5433/plants')) };
  const text = await runInProcess(['config'], env);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^DATABASE_URL=postgres:\/\/app:\*{5}@db\.internal:5433\/plants\?password=\*{5}&sslpassword=\*{5}&sslmode=disable$/m);
  const json = await runInProcess(['config', '--json'], env);
  assert.equal(json.code, 0, json.stderr);
  for (const output of [text.stdout, text.stderr, json.stdout, json.stderr]) assert.doesNotMatch(output, SECRETS);
});

if (!(await postgresReachable())) {
  test('a PostgreSQL store named without its passwords', { skip: POSTGRES_SKIP_REASON }, () => undefined);
} else {
  test('serve and the commands name a PostgreSQL store without its passwords: the store line, the start and stop lines', async (t) => {
    const database = new URL(await freshPostgresDatabase(t));
    // The test server trusts local connections: the passwords are never checked, so they can be any text.
    if (database.password !== '') return t.skip('the test server asks for a password');
    const env = { DATABASE_URL: withPasswords(database) };
    const server = await startServer(t, env);
    assert.equal(await server.stop(), 0);
    assert.match(server.stderr, /^plantstore: created a new PostgreSQL store "plantstore_test_[0-9a-f]+" on 127\.0\.0\.1:5432$/m);
    const start = server.logs.find((line) => line['msg'] === 'plantstore serving') as { config: Record<string, string> } | undefined;
    assert.match(start?.config['DATABASE_URL'] ?? '', /^postgres:\/\/\w+:\*{5}@127\.0\.0\.1:5432\/\w+\?password=\*{5}&sslpassword=\*{5}&sslmode=disable$/);
    assert.ok(server.logs.some((line) => line['msg'] === 'stopped'), 'the stop line is there');
    assert.doesNotMatch(`${server.stderr}${JSON.stringify(server.logs)}`, SECRETS);

    const listed = await runInProcess(['token', 'list'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stderr, /^plantstore: using the PostgreSQL store "plantstore_test_[0-9a-f]+" on 127\.0\.0\.1:5432$/m);
    assert.doesNotMatch(listed.stderr, SECRETS);
  });
}
