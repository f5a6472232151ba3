import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { createToken, runCli, type ServerProcess, startServer } from '../helpers/processes.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';
import { until, within } from '../helpers/until.js';
import { createUnderLoad } from '../helpers/webhooks.js';

// kill -9 leaves the page cache behind, so a commit answered before it was
// synced survives it; a power cut does not. Here the store lives on a
// filesystem that, when it stops, undoes every write not yet synced
// (test/helpers/power-loss-fs.py, through FUSE): the server is killed under
// load, the power goes, and every plant answered 200 must still be there.

const POWER_LOSS_FS = fileURLToPath(new URL('../helpers/power-loss-fs.py', import.meta.url));
/** Debian's own Python, which python3-fusepy installs into. */
const PYTHON = '/usr/bin/python3';
/** Plants committed before the server is killed: enough for WAL checkpoints to come and go. */
const COMMITTED = 2000;

/** Why the filesystem cannot be mounted here, or undefined when it can. */
function cannotMount(): string | undefined {
  if (process.getuid?.() !== 0) return 'a FUSE mount needs root; run as root to test a power cut';
  try {
    execFileSync(PYTHON, ['-c', 'import fusepy'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'python3-fusepy is not installed (apt-get install python3-fusepy); it simulates the power cut';
  }
}

test('sqlite: after the server is killed and the power is cut, every plant answered 200 is in the store, which is whole', async (t) => {
  const reason = cannotMount();
  if (!requireOrSkip(t, reason ?? '', reason === undefined)) return;
  // Not tempDir: the folder is removed only once the filesystem is down and the mount gone.
  const root = mkdtempSync(join(tmpdir(), 'plantstore-power-'));
  const [backing, mountpoint] = [join(root, 'disk'), join(root, 'mounted')];
  mkdirSync(backing);
  mkdirSync(mountpoint);
  const fs = spawn(PYTHON, [POWER_LOSS_FS, backing, mountpoint], { stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  fs.stdout!.setEncoding('utf8').on('data', (chunk: string) => (said += chunk));
  fs.stderr!.setEncoding('utf8').on('data', (chunk: string) => (said += chunk));
  const stopped = once(fs, 'exit');
  let server: ServerProcess | undefined;
  t.after(async () => {
    server?.child.kill('SIGKILL');
    if (fs.exitCode === null && fs.signalCode === null) {
      fs.kill('SIGTERM');
      await within('the filesystem stops', stopped, 30_000);
    }
    try {
      execFileSync('umount', ['-l', mountpoint], { stdio: 'ignore' });
    } catch {
      // Unmounted already, as it should be.
    }
    rmSync(root, { recursive: true, force: true });
  });
  await within(
    'the filesystem is mounted',
    new Promise<void>((resolve, reject) => {
      fs.stdout!.on('data', () => said.includes('mounted\n') && resolve());
      fs.on('exit', (code) => reject(new Error(`the filesystem exited with ${code}: ${said}`)));
    }),
    30_000,
  );

  const env = { DATABASE_URL: `sqlite:${join(mountpoint, 'plantstore.db')}` };
  const token = await createToken(env, 'power');
  server = await startServer(t, env);
  const load = createUnderLoad([server.url], token, 9007199254740993n, 8);
  await until(`${COMMITTED} plants are committed`, async () => (await committed(server.url)) >= COMMITTED, 120_000);
  // Killed with creates in flight, then the power goes: what was not synced is lost.
  server.child.kill('SIGKILL');
  const answered = await load.stop();
  fs.kill('SIGTERM');
  await within('the filesystem stops and loses what was not synced', stopped, 30_000);
  const reverted = Number(/reverted (\d+) writes/.exec(said)?.[1]);
  assert.ok(Number.isInteger(reverted), `the filesystem said: ${said}`);
  t.diagnostic(`${answered.size} creates answered; ${reverted} writes never synced were undone at the cut`);

  // The disk as the power cut left it.
  const afterCut = { DATABASE_URL: `sqlite:${join(backing, 'plantstore.db')}` };
  const db = new Database(join(backing, 'plantstore.db'));
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
  } finally {
    db.close();
  }
  const exported = await runCli(['plants', 'export'], afterCut);
  assert.equal(exported.code, 0, exported.stderr);
  const stored = new Set(exported.stdout.trimEnd().split('\n').map((line) => /"id":(\d+)/.exec(line)![1]!));
  const lost = [...answered].filter((id) => !stored.has(id));
  assert.deepEqual(lost.slice(0, 10), [], `${lost.length} of the ${answered.size} plants answered 200 were lost at the power cut`);
});

/** Plants committed so far, read off the server's metrics. */
async function committed(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^plantstore_store_commit_batch_size_sum (\d+)$/m.exec(text)?.[1] ?? 0);
}
