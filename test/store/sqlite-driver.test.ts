import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { unsupportedNodeLine } from '../../src/node-lines.js';
import { driverPackage, loadDriver, sqliteDriver } from '../../src/store/sqlite/driver.js';
import { sqlite } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { createToken, postPlant, runCli, startServer } from '../helpers/processes.js';

/**
 * better-sqlite3 12 aborted the process on Node.js 24 when V8 finalised a
 * statement (at exit, and under load): these run every process with a full
 * garbage collection every few milliseconds, on whichever line runs the suite.
 */
const UNDER_GC = ['--expose-gc', '--import', new URL('../helpers/gc-pressure.mjs', import.meta.url).href];
const CLIENTS = 16;
const CREATES_PER_CLIENT = 40;

test('each Node.js line loads the SQLite driver built for it', () => {
  assert.equal(driverPackage('20.20.2'), 'plantstore-sqlite-node20');
  assert.equal(driverPackage('22.12.0'), 'better-sqlite3');
  assert.equal(driverPackage('24.21.0'), 'better-sqlite3');

  const running = driverPackage(process.versions.node);
  const version = createRequire(createRequire(import.meta.url).resolve(running))('better-sqlite3/package.json').version as string;
  assert.equal(Number.parseInt(version, 10), process.versions.node.startsWith('20.') ? 12 : 13, `better-sqlite3 ${version}`);
  const db = new (sqliteDriver())(':memory:');
  assert.match((db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v, /^3\./);
  db.close();
});

test('a driver that does not load is one line that says to install with this Node.js', () => {
  const missing = () => {
    throw new Error("Cannot find module 'better-sqlite3'\nRequire stack:\n- /srv/plantstore/dist/store/sqlite/driver.js");
  };
  assert.throws(
    () => loadDriver('24.21.0', missing),
    (error: Error) => {
      assert.equal(
        error.message,
        "the SQLite driver for Node.js 24.21.0 (better-sqlite3) could not be loaded: Cannot find module 'better-sqlite3'; " +
          'run `npm ci` with this Node.js (node_modules installed with another Node.js line holds the other driver)',
      );
      return true;
    },
  );
});

test('only the supported Node.js lines run the service', () => {
  for (const version of ['20.20.2', '22.12.0', '24.21.0']) assert.equal(unsupportedNodeLine(version), undefined, version);
  for (const version of ['18.20.4', '21.7.3', '23.11.0', '26.1.0']) {
    assert.equal(
      unsupportedNodeLine(version),
      `Node.js ${version} is not supported: the plant store runs on Node.js 20, 22, 24 (docs/operations.md, "Supported Node.js")`,
    );
  }
});

test('on an unsupported Node.js every command exits 1 with that one line, before it opens a store', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  for (const args of [['token', 'create', '--name', 'x'], ['plants', 'export'], ['schema']]) {
    const refused = await runMain(args, env, '', '23.11.0');
    assert.deepEqual(
      refused,
      { code: 1, stdout: '', stderr: 'plantstore: Node.js 23.11.0 is not supported: the plant store runs on Node.js 20, 22, 24 (docs/operations.md, "Supported Node.js")\n' },
      args.join(' '),
    );
  }
  assert.equal(existsSync(env.DATABASE_URL.slice('sqlite:'.length)), false, 'no store was made');
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
