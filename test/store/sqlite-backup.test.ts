import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { NewPlant } from '../../src/plants/plant.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { within } from '../helpers/until.js';

/** Plants enough for the copy to take several steps: a copy that read afresh each step would start over after every commit between two. */
const PLANTS = 200_000;

test('a backup completes while another connection commits between every two of its steps, and holds the store as it was when it began', async (t) => {
  const dir = tempDir(t);
  const store = SqliteStore.open(join(dir, 'plantstore.db'));
  t.after(() => store.close());
  for (let first = 1; first <= PLANTS; first += 20_000) {
    const plants: NewPlant[] = [];
    for (let id = first; id < first + 20_000; id++) plants.push({ id: BigInt(id), name: `plant ${id}` });
    await store.createPlants(plants);
  }

  const backup = store.backup(join(dir, 'backup.db'), { replace: false });
  // Each turn of the event loop, one commit and one step of the copy.
  let writing = true;
  let commits = 0;
  const writer = (async () => {
    for (let id = PLANTS + 1; writing; id++) {
      await store.createPlants([{ id: BigInt(id), name: 'created during the backup' }]);
      commits += 1;
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const report = await within('the backup completes', backup, 30_000).finally(() => (writing = false));
  await writer;
  assert.ok(commits > 1, 'commits went on while the copy ran');
  assert.equal(report.plants, PLANTS, 'the copy is the store as it was when the backup began');
});
