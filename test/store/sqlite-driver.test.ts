import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { sqlite } from '../helpers/backends.js';
import { createToken, postPlant, runCli, startServer } from '../helpers/processes.js';

/**
 * A native driver may abort the process when V8 finalises a statement (at
 * exit, and under load), as better-sqlite3 12 did on Node.js 24: these run
 * every process with a full garbage collection every few milliseconds, on
 * whichever line runs the suite.
 */
const UNDER_GC = ['--expose-gc', '--import', new URL('../helpers/gc-pressure.mjs', import.meta.url).href];
const CLIENTS = 16;
const CREATES_PER_CLIENT = 40;

test('the SQLite driver is better-sqlite3 13, built on Node-API and shipped prebuilt for every supported line', () => {
  const version = createRequire(import.meta.url)('better-sqlite3/package.json').version as string;
  assert.equal(Number.parseInt(version, 10), 13, `better-sqlite3 ${version}`);
  const db = new Database(':memory:');
  assert.match((db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v, /^3\./);
  db.close();
});

for (const args of [[], ['--workers', '2']]) {
  test(`serve ${[...args, 'under load'].join(' ')} with constant garbage collection stops with exit code 0`, async (t) => {
    const env = { DATABASE_URL: await sqlite.freshUrl(t) };
    const token = await createToken(env, 'gc');
    const server = await startServer(t, env, args, UNDER_GC);
    const statuses = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        const seen: number[] = [];
        for (let i = 0; i < CREATES_PER_CLIENT; i++) {
          const id = 2n ** 53n + BigInt(client * CREATES_PER_CLIENT + i);
          seen.push((await postPlant(server.url, token, `{"id":${id},"name":"gc ${id}"}`)).status);
        }
        return seen;
      }),
    );
    assert.deepEqual(new Set(statuses.flat()), new Set([200]));

    assert.equal(await server.stop('SIGTERM'), 0, 'a graceful stop exits 0');
    assert.equal(server.child.signalCode, null, 'the process was not ended by a signal (SIGABRT)');
    assert.deepEqual(server.logs.filter((line) => Number(line['level']) >= 50), [], 'no error or fatal line');

    const exported = await runCli(['plants', 'export'], env, UNDER_GC);
    assert.equal(exported.code, 0, exported.stderr);
    assert.equal(exported.stdout.trimEnd().split('\n').length, CLIENTS * CREATES_PER_CLIENT);
  });
}

test('copy under constant garbage collection copies everything and exits 0', async (t) => {
  const from = await sqlite.freshUrl(t);
  const to = await sqlite.freshUrl(t);
  const token = await createToken({ DATABASE_URL: from }, 'gc');
  const server = await startServer(t, { DATABASE_URL: from });
  for (let i = 0; i < 300; i++) assert.equal((await postPlant(server.url, token, `{"id":${i},"name":"copied"}`)).status, 200);
  assert.equal(await server.stop('SIGTERM'), 0);

  const copied = await runCli(['copy', '--from', from, '--to', to, '--batch-size', '7'], {}, UNDER_GC);
  assert.equal(copied.code, 0, copied.stderr);
  assert.match(copied.stderr, /copy: 300 plants copied \(300 new, 0 already there\); the target holds 300/);
});
