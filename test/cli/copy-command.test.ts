import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { type TestContext, test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';
import type { NewPlant } from '../../src/plants/plant.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { sqlite, testBackends } from '../helpers/backends.js';
import { BIN, createToken, postPlant, runInProcess, startServer } from '../helpers/processes.js';
import { within } from '../helpers/until.js';

async function open(url: string): Promise<Store> {
  return openStore({ database: parseDatabaseUrl(url, 'test'), databasePoolSize: 2 });
}

/** A source store holding `count` plants (the int64 edges among them) and two tokens, one revoked. */
async function filledSource(t: TestContext, count: number): Promise<{ url: string; token: string }> {
  const url = await sqlite.freshUrl(t);
  const token = await createToken({ DATABASE_URL: url }, 'kept');
  await createToken({ DATABASE_URL: url }, 'gone');
  await runInProcess(['token', 'revoke', 'gone'], { DATABASE_URL: url });
  const store = await open(url);
  const plants: NewPlant[] = [
    { id: -(2n ** 63n), name: 'min' },
    { id: 2n ** 63n - 1n, name: 'max', tag: '' },
    { id: 2n ** 53n + 1n, name: 'odd', tag: 'exact' },
  ];
  for (let i = 0; plants.length < count; i++) plants.push({ id: BigInt(i * 7), name: `plant ${i}`, tag: `t${i % 5}` });
  for (let i = 0; i < plants.length; i += 5000) await store.createPlants(plants.slice(i, i + 5000));
  await store.close();
  return { url, token };
}

for (const target of await testBackends('copy')) {
  test(`copy from SQLite to ${target.name} moves every plant and token exactly`, async (t) => {
    const source = await filledSource(t, 2500);
    const to = await target.freshUrl(t);
    const result = await runInProcess(['copy', '--from', source.url, '--to', to, '--batch-size', '700']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /^copy: 2 tokens \(2 new\)\n/m);
    const path = (url: string) => (url.startsWith('sqlite:') ? `SQLite store ${url.slice('sqlite:'.length)}` : 'PostgreSQL store "');
    assert.ok(result.stderr.startsWith(`plantstore: --from: using the ${path(source.url)}\nplantstore: --to: created a new ${path(to)}`), result.stderr);
    assert.match(result.stderr, /copy: 2500 plants copied \(2500 new, 0 already there\); the target holds 2500\n$/);

    const [before, after] = await Promise.all([runInProcess(['plants', 'export'], { DATABASE_URL: source.url }), runInProcess(['plants', 'export'], { DATABASE_URL: to })]);
    assert.equal(after.stdout, before.stdout);
    const tokens = async (url: string) => JSON.parse((await runInProcess(['token', 'list', '--json'], { DATABASE_URL: url })).stdout);
    assert.deepEqual(await tokens(to), await tokens(source.url));

    const server = await startServer(t, { DATABASE_URL: to });
    assert.equal((await postPlant(server.url, source.token, '{"id":9007199254740993,"name":"odd","tag":"exact"}')).status, 200);
  });

  test(`an interrupted copy to ${target.name} run again ends with every plant once`, async (t) => {
    const source = await filledSource(t, 40_000);
    const to = await target.freshUrl(t);
    const child = spawn(process.execPath, [BIN, 'copy', '--from', source.url, '--to', to, '--batch-size', '200'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const exited = once(child, 'exit');
    // Frozen as soon as it reports its first batch copied, then killed: interrupted part way, whatever the machine's speed.
    const firstProgress = new Promise<void>((resolve) => {
      createInterface({ input: child.stderr! }).on('line', (line) => /^copy: plants: [1-9]\d*\/40000/.test(line) && resolve());
    });
    await within('the copy reports its first batch', firstProgress, 30_000);
    child.kill('SIGSTOP');
    child.kill('SIGKILL');
    await within('the copy is killed', exited, 10_000);
    const store = await open(to);
    const held = await store.countPlants();
    await store.close();
    assert.ok(held > 0n && held < 40_000n, `interrupted part way (${held} copied)`);

    const again = await runInProcess(['copy', '--from', source.url, '--to', to]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, new RegExp(`copy: 40000 plants copied \\(${40_000n - held} new, ${held} already there\\); the target holds 40000\\n$`));
    const [before, after] = await Promise.all([runInProcess(['plants', 'export'], { DATABASE_URL: source.url }), runInProcess(['plants', 'export'], { DATABASE_URL: to })]);
    assert.equal(after.stdout, before.stdout);
  });
}

test('a plant that conflicts in the target is listed and the copy exits 1', async (t) => {
  const source = await filledSource(t, 10);
  const to = await sqlite.freshUrl(t);
  const target = await open(to);
  await target.createPlants([{ id: 7n, name: 'someone else' }]);
  await target.close();
  const result = await runInProcess(['copy', '--from', source.url, '--to', to]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /copy: conflict: source \{"id":7,"name":"plant 1","tag":"t1"\}, target \{"id":7,"name":"someone else"\}\n/);
  assert.match(result.stderr, /plantstore: 1 plants conflict with different plants under the same id in the target\n$/);
});

test('copy reads no DATABASE_URL: a server setting in the environment does not stop it', async (t) => {
  const source = await filledSource(t, 10);
  const to = await sqlite.freshUrl(t);
  const result = await runInProcess(['copy', '--from', source.url, '--to', to], { DATABASE_URL: 'not-a-database-url' });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stderr, /copy: 10 plants copied \(10 new, 0 already there\); the target holds 10\n$/);
  assert.equal(result.stderr.match(/^copy: plants: /gm)?.length, 1, `the final progress line once:\n${result.stderr}`);
  assert.match(result.stderr, /^copy: plants: 10\/10 \(100%\)$/m);
});

test('bad copy command lines exit 2', async (t) => {
  const url = await sqlite.freshUrl(t);
  const cases: [string[], string][] = [
    [['copy', '--from', url], 'plantstore: copy needs --from URL and --to URL\n'],
    [['copy', '--from', url, '--to', url], 'plantstore: --from and --to name the same store\n'],
    [['copy', '--from', url, '--to', 'ftp://x'], 'plantstore: --to must be a database URL: sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE\n'],
    [['copy', '--from', url, '--to', `${url}2`, '--batch-size', '0'], 'plantstore: --batch-size must be a whole number from 1 to 100000, got "0"\n'],
  ];
  for (const [args, stderr] of cases) {
    const result = await runInProcess(args);
    assert.equal(result.code, 2, args.join(' '));
    assert.equal(result.stderr, stderr);
  }
});
