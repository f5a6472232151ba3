import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';
import type { NewPlant } from '../../src/plants/plant.js';
import { openStore } from '../../src/store/open-store.js';
import Database from 'better-sqlite3';
import { runMain } from '../helpers/in-process-cli.js';
import { createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until, within } from '../helpers/until.js';

/** Plants in the store before the clients start: a copy of some size (test/store/sqlite-backup.test.ts proves it completes under commits). */
const PRELOADED = 100_000;

/** A SQLite store in a folder of its own, with a token, and `preloaded` plants (ids 1 up) put in through the store layer. */
async function storeWith(t: TestContext, preloaded = 0): Promise<{ dir: string; path: string; url: string; token: string }> {
  const dir = tempDir(t);
  const path = join(dir, 'plantstore.db');
  const url = `sqlite:${path}`;
  const token = await createToken({ DATABASE_URL: url }, 'ci');
  const store = await openStore({ database: parseDatabaseUrl(url, 'test') });
  try {
    for (let first = 1; first <= preloaded; first += 20_000) {
      const plants: NewPlant[] = [];
      for (let id = first; id < Math.min(first + 20_000, preloaded + 1); id++) plants.push({ id: BigInt(id), name: `preloaded ${id}` });
      await store.createPlants(plants);
    }
  } finally {
    await store.close();
  }
  return { dir, path, url, token };
}

/** `text` as a regular expression that matches it alone. */
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const plantBody = (id: number, name = `plant ${id}`) => JSON.stringify({ id, name });

/** `clients` loops creating plants with ids from `firstId` on, each noting the ids answered 200, in order, until stopped. */
function creators(url: string, token: string, clients: number, firstId: number) {
  let next = firstId;
  let stopping = false;
  const acknowledged: number[] = [];
  const failures: string[] = [];
  const loops = Array.from({ length: clients }, async () => {
    while (!stopping) {
      const id = next++;
      const answer = await postPlant(url, token, plantBody(id));
      if (answer.status === 200) acknowledged.push(id);
      else failures.push(`${id}: ${answer.status} ${answer.body}`);
    }
  });
  return {
    acknowledged,
    failures,
    stop: async () => {
      stopping = true;
      await within('the creating clients stop', Promise.all(loops), 15_000);
    },
  };
}

/** The permission bits of a file, in octal as `ls -l` reads them. */
const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

/** Opens `path` read-only, as a person checking a backup would, for `read`. */
function readOnly<T>(path: string, read: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** Posts `bodies` eight at a time; resolves their statuses, in order. */
async function statuses(url: string, token: string, bodies: readonly string[]): Promise<number[]> {
  const answers: number[] = new Array(bodies.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < bodies.length; i = next++) answers[i] = (await postPlant(url, token, bodies[i]!)).status;
    }),
  );
  return answers;
}

test('a backup taken while 8 clients create plants is intact, one private file, holds every plant acknowledged before it began, and a server started on it serves them', async (t) => {
  const store = await storeWith(t, PRELOADED);
  const server = await startServer(t, { DATABASE_URL: store.url });
  const load = creators(server.url, store.token, 8, 1_000_001);
  t.after(() => load.stop());
  await until('the clients have 400 plants acknowledged', () => load.acknowledged.length >= 400);
  const before = [...load.acknowledged];

  const file = join(store.dir, 'backup.db');
  const backup = await runInProcess(['backup', file], { DATABASE_URL: store.url });
  const during = load.acknowledged.length - before.length;
  await load.stop();
  assert.equal(backup.code, 0, backup.stderr);
  assert.deepEqual(load.failures, []);
  assert.ok(during > 0, 'the clients went on creating while the backup ran');
  assert.equal(backup.stderr, `plantstore: using the SQLite store ${store.path}\n`);

  assert.equal(modeOf(file), '0600');
  assert.deepEqual(readdirSync(store.dir).filter((name) => name.startsWith('backup')), ['backup.db'], 'one file: no log, journal or temporary file beside it');
  const { integrity, journalMode, plants, ids } = readOnly(file, (db) => ({
    integrity: db.pragma('integrity_check', { simple: true }),
    journalMode: db.pragma('journal_mode', { simple: true }),
    plants: (db.prepare('SELECT count(*) AS n FROM plants').get() as { n: number }).n,
    ids: new Set((db.prepare('SELECT id FROM plants WHERE id > ?').all(PRELOADED) as { id: number }[]).map((row) => row.id)),
  }));
  assert.deepEqual([integrity, journalMode], ['ok', 'delete']);
  assert.deepEqual(readdirSync(store.dir).filter((name) => name.startsWith('backup')), ['backup.db'], 'read without a log beside it');
  assert.deepEqual(before.filter((id) => !ids.has(id)), [], 'every plant acknowledged before the backup began is in it');
  const bytes = statSync(file).size;
  assert.match(backup.stdout, new RegExp(`^backed up ${plants} plants to ${escaped(file)}\nsize: \\d+\\.\\d MiB \\(${bytes} bytes\\)\nschema version: \\d+\n$`));

  const restored = await startServer(t, { DATABASE_URL: `sqlite:${file}` });
  const conflicting = await statuses(restored.url, store.token, before.map((id) => plantBody(id, `not plant ${id}`)));
  assert.deepEqual(new Set(conflicting), new Set([409]), 'the server on the backup holds each of them: another plant under its id conflicts');
  const replayed = await statuses(restored.url, store.token, [before[0]!, before.at(-1)!, 1, PRELOADED].map((id) => (id > PRELOADED ? plantBody(id) : JSON.stringify({ id, name: `preloaded ${id}` }))));
  assert.deepEqual(replayed, [200, 200, 200, 200], 'the same plant again is a replay');
});

test('backup --json prints one object; an existing FILE is replaced only with --force; the store itself, a missing store and a missing folder are refused', async (t) => {
  const store = await storeWith(t, 10);
  const env = { DATABASE_URL: store.url };
  const file = join(store.dir, 'backup.db');

  const json = await runMain(['backup', file, '--json'], env);
  assert.equal(json.code, 0, json.stderr);
  const printed = JSON.parse(json.stdout) as Record<string, unknown>;
  assert.deepEqual(printed, { file, plants: 10, bytes: statSync(file).size, schemaVersion: printed['schemaVersion'] });
  assert.ok(Number.isInteger(printed['schemaVersion']));

  writeFileSync(file, 'an older backup');
  const kept = await runMain(['backup', file], env);
  assert.deepEqual(kept, { code: 1, stdout: '', stderr: `plantstore: ${file} exists; --force replaces it\n` });
  assert.equal(readFileSync(file, 'utf8'), 'an older backup');
  const replaced = await runMain(['backup', file, '--force'], env);
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.equal(readOnly(file, (db) => db.pragma('integrity_check', { simple: true })), 'ok');

  const link = join(tempDir(t), 'link');
  symlinkSync(store.dir, link);
  for (const itself of [store.path, `${store.path}-wal`, `${store.path}-journal`, join(link, 'plantstore.db')]) {
    const refused = await runMain(['backup', itself, '--force'], env);
    assert.deepEqual(refused, { code: 1, stdout: '', stderr: `plantstore: ${itself} is the store itself, or one of its files; back up to another file\n` });
  }
  const noFolder = await runMain(['backup', join(store.dir, 'nowhere', 'backup.db')], env);
  assert.equal(noFolder.code, 1);
  assert.match(noFolder.stderr, /the folder of .*nowhere\/backup\.db does not exist\n$/);

  const missing = join(store.dir, 'missing.db');
  const noStore = await runMain(['backup', join(store.dir, 'other.db')], { DATABASE_URL: `sqlite:${missing}` });
  assert.equal(noStore.code, 1);
  assert.match(noStore.stderr, /^plantstore: the SQLite store .*missing\.db does not exist \(no such file\)/);
  assert.deepEqual(['missing.db', 'other.db'].filter((name) => existsSync(join(store.dir, name))), [], 'nothing made');
  assert.deepEqual(readdirSync(store.dir).filter((name) => name.includes('.tmp-')), [], 'no temporary file left');
});

test('a backup that fails on a full disk leaves FILE as it was, and no temporary file', async (t) => {
  const store = await storeWith(t, 100_000);
  // Not tempDir: the folder is removed only after the disk is unmounted.
  const disk = mkdtempSync(join(tmpdir(), 'plantstore-backup-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', disk], { stdio: 'pipe' });
  } catch (error) {
    rmSync(disk, { recursive: true, force: true });
    const reason = `cannot mount a tmpfs here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()}); run as root to test a full disk`;
    if (process.env['CI'] === 'true') assert.fail(reason);
    t.skip(reason);
    return;
  }
  t.after(() => {
    execFileSync('umount', ['-l', disk]);
    rmSync(disk, { recursive: true, force: true });
  });
  const file = join(disk, 'backup.db');
  writeFileSync(file, 'the last good backup');
  const failed = await runInProcess(['backup', file, '--force'], { DATABASE_URL: store.url });
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, new RegExp(`\nplantstore: cannot back up to ${escaped(file)}: .*full.*\n$`));
  assert.equal(failed.stderr.split('\n').length, 3, 'the store line and one line more');
  assert.deepEqual(readdirSync(disk), ['backup.db']);
  assert.equal(readFileSync(file, 'utf8'), 'the last good backup');
});

test('backup and restore refuse a PostgreSQL store in one line that points to the docs', async () => {
  const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' };
  for (const args of [['backup', 'backup.db'], ['restore', 'backup.db', '--force']]) {
    const refused = await runMain(args, env);
    assert.equal(refused.code, 1, args.join(' '));
    assert.equal(refused.stdout, '');
    assert.match(refused.stderr, /^plantstore: [^\n]*pg_dump[^\n]*pg_basebackup[^\n]*pgBackRest[^\n]*\(docs\/operations\.md#backup-and-restore\)\n$/);
  }
  const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  assert.match(operations, /^## Backup and restore$/m, 'the anchor it names is a heading');
});

test('restore refuses while a server has the store open, idle or not, and changes nothing; once it stopped, it puts the backup in place', async (t) => {
  const store = await storeWith(t);
  const env = { DATABASE_URL: store.url };
  const server = await startServer(t, env);
  const early = Array.from({ length: 20 }, (_, i) => i + 1);
  assert.deepEqual(await statuses(server.url, store.token, early.map((id) => plantBody(id))), early.map(() => 200));
  const file = join(tempDir(t), 'backup.db');
  assert.equal((await runInProcess(['backup', file], env)).code, 0);
  const late = Array.from({ length: 20 }, (_, i) => i + 21);
  assert.deepEqual(await statuses(server.url, store.token, late.map((id) => plantBody(id))), late.map(() => 200));

  const refused = await runInProcess(['restore', file, '--force'], env);
  assert.deepEqual(refused, {
    code: 1,
    stdout: '',
    stderr: `plantstore: restoring ${file} into the SQLite store ${store.path}\nplantstore: another process has the store ${store.path} open: stop the servers (and commands) that use it first\n`,
  });
  assert.equal((await postPlant(server.url, store.token, plantBody(40, 'other'))).status, 409, 'the plants created since the backup are still there');
  assert.equal(await server.stop(), 0);

  const withoutForce = await runInProcess(['restore', file], env);
  assert.equal(withoutForce.code, 1);
  assert.match(withoutForce.stderr, /exists; --force replaces it with .*backup\.db, and what was created since that backup is lost\n$/);

  const restored = await runInProcess(['restore', file, '--force'], env);
  assert.equal(restored.code, 0, restored.stderr);
  assert.equal(restored.stdout, `restored 20 plants (schema version ${readOnly(file, (db) => (db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number }).v)}) from ${file}, replacing what the store held\n`);
  assert.equal(modeOf(store.path), '0600');
  assert.deepEqual(readdirSync(store.dir), ['plantstore.db'], 'no log, shared memory or journal left beside it');

  const after = await startServer(t, env);
  assert.deepEqual(await statuses(after.url, store.token, early.map((id) => plantBody(id, 'other'))), early.map(() => 409), 'the plants of the backup are there');
  assert.deepEqual(await statuses(after.url, store.token, late.map((id) => plantBody(id, 'other'))), late.map(() => 200), 'the plants created since are not');
});

test('restore where the store file is gone makes it from the backup, and removes the log and shared memory the lost file left rather than reading them in', async (t) => {
  const store = await storeWith(t);
  const env = { DATABASE_URL: store.url };
  const file = join(tempDir(t), 'backup.db');
  assert.equal((await runInProcess(['backup', file], env)).code, 0);
  // No deliverer: one would outlive the killed server and fold the log into the file as it closed the store.
  const server = await startServer(t, { ...env, WEBHOOK_DELIVERY: 'off' });
  const lost = Array.from({ length: 50 }, (_, i) => i + 1);
  assert.deepEqual(await statuses(server.url, store.token, lost.map((id) => plantBody(id))), lost.map(() => 200));
  await server.stop('SIGKILL');
  assert.ok(statSync(`${store.path}-wal`).size > 0, 'the killed server left its log, with the plants in it');
  rmSync(store.path);

  const restored = await runInProcess(['restore', file], env);
  assert.equal(restored.code, 0, restored.stderr);
  assert.equal(restored.stdout, `restored 0 plants (schema version ${readOnly(file, (db) => (db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number }).v)}) from ${file} into a new store\n`);
  assert.deepEqual(readdirSync(store.dir), ['plantstore.db']);
  assert.equal(modeOf(store.path), '0600');
  const after = await startServer(t, env);
  assert.deepEqual(await statuses(after.url, store.token, lost.map((id) => plantBody(id, 'other'))), lost.map(() => 200), 'none of the lost plants came back');
});

test('restore refuses a file that is not a sound plant store, and leaves a missing store missing', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'store', 'plantstore.db')}` };
  const source = await storeWith(t, 20_000);
  const backup = join(dir, 'backup.db');
  assert.equal((await runInProcess(['backup', backup], { DATABASE_URL: source.url })).code, 0);

  const notSqlite = join(dir, 'notes.txt');
  writeFileSync(notSqlite, 'not a database at all '.repeat(200));
  const corrupt = join(dir, 'corrupt.db');
  const damaged = readFileSync(backup);
  damaged.fill(0xff, 4096 * 20, 4096 * 21);
  writeFileSync(corrupt, damaged);
  const other = join(dir, 'other.db');
  const db = new Database(other);
  db.exec('CREATE TABLE notes (text TEXT)');
  db.close();
  const newer = join(dir, 'newer.db');
  writeFileSync(newer, readFileSync(backup));
  const future = new Database(newer);
  future.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)").run();
  future.close();

  for (const [file, why] of [
    [notSqlite, /is not a sound SQLite database \(file is not a database\)/],
    [corrupt, /fails SQLite's integrity check|is not a sound SQLite database/],
    [other, /holds no plantstore tables/],
    [newer, /has schema version 999, newer than this build knows \(\d+\); run a newer plantstore/],
    [join(dir, 'absent.db'), /does not exist or is not a file/],
  ] as const) {
    const refused = await runInProcess(['restore', file], env);
    assert.equal(refused.code, 1, file);
    assert.match(refused.stderr, new RegExp(`\nplantstore: ${escaped(file)}[^\n]*(?:${why.source})[^\n]*\n$`), file);
  }
  assert.equal(existsSync(join(dir, 'store')), false, 'no store, nor its folder, was made');
});
