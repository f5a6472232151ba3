import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import pg from 'pg';
import { type Backend, testBackends } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { runInProcess, startServer } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until } from '../helpers/until.js';

/** A store that does not exist yet, how the commands name it, and what of it is there: files and folders, or tables. */
interface MissingStore {
  url: string;
  label: string;
  traces(): Promise<string[]>;
}

/** SQLite: a file in a folder that does not exist either. PostgreSQL: an empty database, reached with a password the commands must not repeat. */
async function missingStore(t: TestContext, backend: Backend): Promise<MissingStore> {
  if (backend.name === 'sqlite') {
    const folder = join(tempDir(t), 'data');
    const path = join(folder, 'plantstore.db');
    return { url: `sqlite:${path}`, label: `SQLite store ${path}`, traces: async () => [folder, path].filter((made) => existsSync(made)) };
  }
  const url = new URL(await backend.freshUrl(t));
  const tables = async () => {
    const client = new pg.Client(url.toString());
    await client.connect();
    try {
      return (await client.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'")).rows.map((row) => row.name);
    } finally {
      await client.end();
    }
  };
  url.password = 'hunter2-unused-under-trust';
  return { url: url.toString(), label: `PostgreSQL store "${url.pathname.slice(1)}" on ${url.hostname}:${url.port || 5432}`, traces: tables };
}

const READ_AND_MANAGE = [
  ['plants', 'export'],
  ['token', 'list'],
  ['token', 'list', '--json'],
  ['token', 'revoke', 'ci'],
  ['webhook', 'add', 'https://example.com/hooks'],
  ['webhook', 'list'],
  ['webhook', 'remove', '1'],
  ['webhook', 'rotate-secret', '1'],
  ['schema'],
  ['schema', '--json'],
];

const backends = await testBackends('missing stores');

for (const backend of backends) {
  test(`${backend.name}: every command that reads or manages a store refuses a missing one, in one line that names it, and creates nothing`, async (t) => {
    const store = await missingStore(t, backend);
    const refusal = `plantstore: the ${store.label} does not exist (${backend.name === 'sqlite' ? 'no such file' : 'the database holds no plantstore tables'}); \`plantstore serve\` or \`plantstore token create\` makes one\n`;
    for (const args of READ_AND_MANAGE) {
      const result = await runMain(args, { DATABASE_URL: store.url });
      assert.deepEqual(result, { code: 1, stdout: '', stderr: refusal }, args.join(' '));
    }
    const target = join(tempDir(t), 'target', 'plantstore.db');
    const copy = await runMain(['copy', '--from', store.url, '--to', `sqlite:${target}`]);
    assert.deepEqual(copy, { code: 1, stdout: '', stderr: refusal }, 'copy --from');
    assert.equal(existsSync(join(target, '..')), false, 'copy made no target');
    assert.deepEqual(await store.traces(), [], 'nothing was created');
  });

  test(`${backend.name}: token create makes the store and says so on stderr, its stdout the token alone; then every command names the store`, async (t) => {
    const store = await missingStore(t, backend);
    const env = { DATABASE_URL: store.url };
    // A child process, as in TOKEN=$(plantstore token create --name ci).
    const created = await runInProcess(['token', 'create', '--name', 'ci'], env);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^ps_[A-Za-z0-9_-]{43}\n$/);
    assert.match(created.stderr, new RegExp(`^plantstore: created a new ${escape(store.label)}\nCreated token 1 \\(ci\\)`));
    const again = await runMain(['token', 'create', '--name', 'cd'], env);
    assert.match(again.stderr, new RegExp(`^plantstore: using the ${escape(store.label)}\nCreated token 2 \\(cd\\)`));

    const using = `plantstore: using the ${store.label}\n`;
    assert.deepEqual(await runMain(['plants', 'export'], env), { code: 0, stdout: '', stderr: using });
    const listed = await runMain(['token', 'list', '--json'], env);
    assert.equal(listed.stderr, using);
    assert.deepEqual((JSON.parse(listed.stdout) as { name: string }[]).map((token) => token.name), ['ci', 'cd']);
    assert.deepEqual(await runMain(['token', 'revoke', 'cd'], env), { code: 0, stdout: '', stderr: `${using}Revoked token 2 (cd).\n` });
    const subscribed = await runMain(['webhook', 'add', 'https://example.com/hooks', '--json'], env);
    assert.equal(subscribed.stderr, using);
    assert.equal((await runMain(['webhook', 'list'], env)).stderr, using);
    assert.equal((await runMain(['schema'], env)).stderr, using);
    for (const output of [created.stdout, created.stderr, again.stderr, listed.stderr]) assert.ok(!output.includes('hunter2'), 'no password');
  });

  test(`${backend.name}: serve makes a missing store and, once listening, names it on stderr: alone and with workers, one line`, async (t) => {
    for (const workers of ['1', '2']) {
      const store = await missingStore(t, backend);
      const server = await startServer(t, { DATABASE_URL: store.url }, ['--workers', workers]);
      await until('the server names its store', () => server.stderr.length > 0);
      assert.equal(await server.stop(), 0);
      assert.equal(server.stderr, `plantstore: created a new ${store.label}\n`, `--workers ${workers}`);
      const again = await startServer(t, { DATABASE_URL: store.url }, ['--workers', workers]);
      await until('the server names its store', () => again.stderr.length > 0);
      assert.equal(await again.stop(), 0);
      assert.equal(again.stderr, `plantstore: using the ${store.label}\n`, `--workers ${workers}`);
    }
  });
}

const postgres = backends.find((backend) => backend.name === 'postgres');
if (postgres !== undefined) {
  test('postgres: a database that does not exist is refused as missing, without the hint that a command makes it', async (t) => {
    const url = new URL(await postgres.freshUrl(t));
    url.pathname = `${url.pathname}_never_made`;
    const result = await runMain(['token', 'list'], { DATABASE_URL: url.toString() });
    const label = `PostgreSQL store "${url.pathname.slice(1)}" on ${url.hostname}:${url.port || 5432}`;
    assert.deepEqual(result, { code: 1, stdout: '', stderr: `plantstore: the ${label} does not exist (no such database)\n` });
  });
}

function escape(text: string): string {
  return text.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
