import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { runInProcess, startServer } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';

/** A file's or folder's permission bits, as `ls -l` reads them in octal. */
const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

/** The commands run under the umask most systems default to, which would leave new files readable by everyone; children inherit it. */
function underUmask022(t: TestContext): void {
  const previous = process.umask(0o022);
  t.after(() => process.umask(previous));
}

test('under umask 022, serve makes a new SQLite store, its -wal and -shm 0600, and each folder it makes 0700; a folder that was there keeps its mode', async (t) => {
  underUmask022(t);
  const existing = join(tempDir(t), 'existing');
  mkdirSync(existing);
  chmodSync(existing, 0o755);
  const path = join(existing, 'made', 'deeper', 'plantstore.db');
  const server = await startServer(t, { DATABASE_URL: `sqlite:${path}` });
  const modes = Object.fromEntries([path, `${path}-wal`, `${path}-shm`, join(existing, 'made'), join(existing, 'made', 'deeper'), existing].map((p) => [p, modeOf(p)]));
  assert.deepEqual(modes, {
    [path]: '0600',
    [`${path}-wal`]: '0600',
    [`${path}-shm`]: '0600',
    [join(existing, 'made')]: '0700',
    [join(existing, 'made', 'deeper')]: '0700',
    [existing]: '0755',
  });
  assert.equal(await server.stop(), 0);
  assert.doesNotMatch(server.stderr, /warning/);
});

test('under umask 022, token create and copy --to make their SQLite stores 0600 in folders made 0700', async (t) => {
  underUmask022(t);
  const dir = tempDir(t);
  const source = join(dir, 'source', 'plantstore.db');
  const created = await runInProcess(['token', 'create', '--name', 'ci'], { DATABASE_URL: `sqlite:${source}` });
  assert.equal(created.code, 0, created.stderr);
  const target = join(dir, 'target', 'plantstore.db');
  const copied = await runInProcess(['copy', '--from', `sqlite:${source}`, '--to', `sqlite:${target}`]);
  assert.equal(copied.code, 0, copied.stderr);
  assert.deepEqual([source, join(dir, 'source'), target, join(dir, 'target')].map(modeOf), ['0600', '0700', '0600', '0700']);
});

test('a SQLite store that other users may open keeps its mode, and the line that names it warns, naming each file and its mode', async (t) => {
  const path = join(tempDir(t), 'plantstore.db');
  const env = { DATABASE_URL: `sqlite:${path}` };
  assert.equal((await runInProcess(['token', 'create', '--name', 'ci'], env)).code, 0);
  chmodSync(path, 0o644);
  const listed = await runInProcess(['token', 'list'], env);
  assert.equal(listed.code, 0, listed.stderr);
  const files = [path, `${path}-wal`, `${path}-shm`].map((file) => `${file} (mode 0644)`).join(', ');
  const warning = `; warning: users other than the owner may open ${files}, and the store holds token hashes and webhook secrets (chmod 600)`;
  assert.equal(listed.stderr, `plantstore: using the SQLite store ${path}${warning}\n`);
  assert.equal(modeOf(path), '0644');

  const server = await startServer(t, env);
  assert.equal(await server.stop(), 0);
  assert.equal(server.stderr, `plantstore: using the SQLite store ${path}${warning}\n`, 'once, at start');
});
