import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { errorBody, testApp } from '../helpers/test-app.js';

/** A tiny tmpfs, to fill the disk for real. Mounting needs root; elsewhere the test says why it skips. */
function mountTinyDisk(dir: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return `cannot mount a tmpfs here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()}); run as root to test a full disk`;
  }
}


test('a full disk answers 503 and keeps the process alive; freeing space brings writes back', async (t) => {
  // Not tempDir: the folder must be removed after the store is closed and the disk unmounted.
  const disk = mkdtempSync(join(tmpdir(), 'plantstore-disk-'));
  const reason = mountTinyDisk(disk);
  if (reason !== undefined) {
    rmSync(disk, { recursive: true, force: true });
    // CI runs as root: there the test must run.
    if (process.env['CI'] === 'true') assert.fail(reason);
    t.skip(reason);
    return;
  }
  const { app, post, store } = await testApp(t, {
    backend: { name: 'sqlite', freshUrl: async () => `sqlite:${join(disk, 'plantstore.db')}` },
  });
  t.after(() => {
    execFileSync('umount', ['-l', disk]);
    rmSync(disk, { recursive: true, force: true });
  });

  // Leave a little room, then fill it with plants until the disk refuses.
  const filler = join(disk, 'filler');
  writeFileSync(filler, Buffer.alloc(1024 * 1024));
  const acknowledged: number[] = [];
  let refused;
  for (let id = 1; id <= 200 && refused === undefined; id++) {
    const response = await post({ id, name: 'x'.repeat(16 * 1024) });
    if (response.statusCode === 200) acknowledged.push(id);
    else refused = response;
  }
  assert.ok(refused, 'the disk filled up');
  assert.equal(refused.statusCode, 503);
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(errorBody(refused).message, 'The store cannot take writes right now; retry later');
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the process lives on');

  rmSync(filler);
  const after = await post({ id: 1000, name: 'after the disk was freed' });
  assert.equal(after.statusCode, 200, after.body);
  const stored = (await store.listPlants({ limit: 1000 })).map((plant) => Number(plant.id));
  assert.deepEqual(stored, [...acknowledged, 1000], 'every acknowledged plant is there');
});
