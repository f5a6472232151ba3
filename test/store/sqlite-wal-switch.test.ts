import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { runInProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { within } from '../helpers/until.js';

// A new file's switch to WAL needs the file to itself, and while another
// process holds its write lock SQLite answers SQLITE_BUSY at once, without
// the busy timeout: two workers of --workers N starting on a new file meet there.
// Another process holds the lock here; the open is synchronous, so the lock
// holder must be a process of its own, as the other worker is.

/** The busy timeout of sqlite-store.ts: how long the switch is tried again. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Another process that opens `path` (creating it), takes its write lock (as
 * another worker's own migration would) and says "locked"; with `holdMs`, it commits after that long and says
 * "released <Date.now()>", otherwise it holds the lock until killed.
 */
async function lockHolder(t: TestContext, path: string, holdMs?: number): Promise<{ child: ChildProcess; output: () => string }> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const script = `
    const db = new (require(${JSON.stringify(driver)}))(${JSON.stringify(path)});
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    const hold = ${holdMs ?? 'undefined'};
    if (hold === undefined) setInterval(() => undefined, 60000);
    else setTimeout(() => { db.exec('COMMIT'); process.stdout.write('released ' + Date.now() + '\\n'); db.close(); }, hold);
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  await within(
    'the other process holds its lock',
    new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', () => output.includes('locked\n') && resolve());
      child.on('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
    }),
    10_000,
  );
  return { child, output: () => output };
}

test('a new file locked by another process is switched to WAL once the lock is let go, within the busy timeout', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  const holder = await lockHolder(t, path, 300);
  const store = SqliteStore.open(path);
  const openedAt = Date.now();
  t.after(() => store.close());
  await within('the lock holder exits', once(holder.child, 'exit'), 10_000);
  const released = Number(/released (\d+)/.exec(holder.output())?.[1]);
  assert.ok(openedAt >= released, `the store opened at ${openedAt}, before the lock was let go at ${released}: it did not wait for it`);
  assert.deepEqual(store.settings(), { journalMode: 'wal', synchronous: 'full', cacheSize: '2048 KiB' });
  assert.deepEqual(await store.createPlants([{ id: 9007199254740993n, name: 'after the wait' }]), [{ outcome: 'created' }]);
});

test('a command on a new file whose lock is never let go fails with the store\'s reason once the busy timeout has passed', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  await lockHolder(t, path);
  // In a process of its own: a switch that never gave up would block it, and the test would still end.
  const started = Date.now();
  const created = await runInProcess(['token', 'create', '--name', 'blocked'], { DATABASE_URL: `sqlite:${path}` });
  const tookMs = Date.now() - started;
  assert.equal(created.code, 1, created.stderr);
  assert.equal(created.stdout, '', 'no token');
  assert.match(created.stderr, /database is locked/);
  assert.ok(tookMs >= BUSY_TIMEOUT_MS, `it gave up after ${tookMs} ms, before the busy timeout`);
  // The timeout, one more try, and a process's start, with room for a loaded machine.
  assert.ok(tookMs <= BUSY_TIMEOUT_MS + 5000, `it gave up only after ${tookMs} ms`);
});
