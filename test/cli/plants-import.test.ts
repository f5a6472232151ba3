import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { type TestContext, test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';
import type { NewPlant } from '../../src/plants/plant.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { type Backend, existingStoreUrl, sqlite, testBackends } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { BIN, createToken, postPlant, startServer } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { within } from '../helpers/until.js';
import { addWebhook, listWebhooks, outboxRows, plantBody } from '../helpers/webhooks.js';

async function open(url: string): Promise<Store> {
  return openStore({ database: parseDatabaseUrl(url, 'test'), databasePoolSize: 2 });
}

/** A store of `backend` that exists and holds `plants`. */
async function storeHolding(t: TestContext, backend: Backend, plants: readonly NewPlant[]): Promise<string> {
  const url = await existingStoreUrl(t, backend);
  const store = await open(url);
  for (let i = 0; i < plants.length; i += 5000) await store.createPlants(plants.slice(i, i + 5000));
  await store.close();
  return url;
}

async function exported(url: string): Promise<string> {
  const result = await runMain(['plants', 'export'], { DATABASE_URL: url });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

function fileOf(t: TestContext, text: string): string {
  const path = join(tempDir(t), 'plants.jsonl');
  writeFileSync(path, text);
  return path;
}

/** The int64 edges, no tag and an empty one, and names that JSON and the terminal must both escape. */
const VARIED: NewPlant[] = [
  { id: -(2n ** 63n), name: 'min' },
  { id: -1n, name: 'minus one', tag: '' },
  { id: 0n, name: '' },
  { id: 2n ** 53n + 1n, name: 'odd', tag: 'exact' },
  { id: 2n ** 63n - 2n, name: 'Monstera deliciosa 🌿 日本の植物', tag: 'aroïd' },
  { id: 2n ** 63n - 1n, name: 'max' },
  { id: 42n, name: 'Fern\u009b2J\u202eknabmo', tag: 'quotes " and \\ back' },
  { id: 43n, name: 'line\nbreak\ttab\u007f', tag: 'e\u0301' },
];

function manyPlants(count: number): NewPlant[] {
  const plants = [...VARIED];
  for (let i = 0; plants.length < count; i++) plants.push({ id: BigInt(1000 + i * 7), name: `plant ${i}`, ...(i % 3 === 0 ? {} : { tag: `t${i % 5}` }) });
  return plants;
}

for (const backend of await testBackends('plants import')) {
  test(`${backend.name}: an export imported into a new store exports byte for byte the same, in batches, with progress; a second import adds nothing`, async (t) => {
    const source = await storeHolding(t, sqlite, manyPlants(20_000));
    const lines = await exported(source);
    const file = fileOf(t, lines);
    const target = await backend.freshUrl(t);

    const imported = await runMain(['plants', 'import', file], { DATABASE_URL: target });
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stderr, /^plantstore: created a new /);
    const size = statSync(file).size;
    assert.match(imported.stderr, new RegExp(`^plants import \\(bytes\\): ${size}/${size} \\(100%\\)$`, 'm'));
    assert.match(imported.stderr, /\nplants import: 20000 lines: 20000 created, 0 already present, 0 conflicts, 0 invalid, in 20 transactions\n$/);
    assert.equal(imported.stdout, '');
    assert.equal(await exported(target), lines);

    const again = await runMain(['plants', 'import', file, '--json', '--batch-size', '5000'], { DATABASE_URL: target });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), { lines: 20_000, created: 0, alreadyPresent: 20_000, conflicts: 0, invalid: 0, transactions: 4, problems: [] });
    assert.equal(await exported(target), lines);
  });

  test(`${backend.name}: a bad line or a conflict is reported with its number and the API's own message; the rest is imported, the stored plant kept, exit 1`, async (t) => {
    const env = { DATABASE_URL: await backend.freshUrl(t), BODY_LIMIT: '300' };
    const token = await createToken(env, 'writer');
    const server = await startServer(t, env);
    const stored = '{"id":7,"name":"someone\\u202eelse"}';
    assert.equal((await postPlant(server.url, token, stored)).status, 200);
    const lines = [
      '{"id":1,"name":"good"}',
      '{"id":7,"name":"plant"}',
      '{"id":1.5,"name":"a"}',
      '{"name":"a"}',
      '{"id":2}',
      '{"id":9223372036854775808,"name":"beyond int64"}',
      '{"id":"3","name":"a"}',
      'not json',
      '{"id":4,"name":"a","tag":null}',
      '{"id":5,"name":"\\ud800"}',
      '{"id":6,"name":"a\\u0000"}',
      '{"id":8,"name":"extra","colour":"green"}',
      plantBody(9n, 'x'.repeat(300)),
      '{"id":10,"name":"cut short"',
      '{"id":1,"name":"good"}',
      '[{"id":11,"name":"in an array"}]',
      '{"id":12,"name":"after them all"}',
    ];
    const refused = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 16];
    // The server runs on the same store: an import need not wait for it to stop.
    const result = await runMain(['plants', 'import', fileOf(t, `${lines.join('\n')}\n`)], env);
    assert.equal(result.code, 1, result.stderr);
    for (const number of refused) {
      const answer = await postPlant(server.url, token, lines[number - 1]!);
      assert.ok(answer.status >= 400, `the API refuses line ${number} too`);
      const { message } = JSON.parse(answer.body) as { message: string };
      assert.ok(result.stderr.includes(`plants import: line ${number}: ${message.replaceAll('\n', '\\n')}`), `line ${number}: ${message}\n${result.stderr}`);
    }
    assert.match(result.stderr, /^plants import: line 2: A plant with this id already exists with a different name or tag: id 7 is taken by another plant; the store holds \{"id":7,"name":"someone\\u202eelse"\}$/m);
    assert.match(result.stderr, /^plants import: line 6: Invalid plant: id must be an integer from -9223372036854775808 to 9223372036854775807$/m);
    assert.match(result.stderr, /^plants import: line 13: The request body is too large: the limit is 300 bytes$/m);
    assert.match(result.stderr, /plants import: 17 lines: 3 created, 1 already present, 1 conflicts, 12 invalid, in 1 transactions\n/);
    assert.match(result.stderr, /\nplantstore: 13 lines were not imported \(1 conflicts, 12 invalid\); the other plants are stored\n$/);
    // An extra property is no reason to refuse a plant: the API takes it too.
    assert.equal((await postPlant(server.url, token, lines[11]!)).status, 200);
    assert.equal(await exported(env.DATABASE_URL), '{"id":1,"name":"good"}\n{"id":7,"name":"someone\\u202eelse"}\n{"id":8,"name":"extra"}\n{"id":12,"name":"after them all"}\n');
  });

  test(`${backend.name}: an import writes no webhook message, though a subscription is active`, async (t) => {
    const env = { DATABASE_URL: await existingStoreUrl(t, backend) };
    const subscription = await addWebhook(env, 'http://127.0.0.1:9/plants');
    const result = await runMain(['plants', 'import', fileOf(t, manyPlants(1500).map((plant) => `${plantBody(plant.id, plant.name, plant.tag)}\n`).join(''))], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /1500 created/);
    assert.deepEqual((await listWebhooks(env)).map((listed) => [listed.id, listed.pending]), [[subscription.id, 0]]);
    assert.equal(await outboxRows(env.DATABASE_URL), 0);
    // The subscription is live: a plant created, rather than restored, gets its message.
    const store = await open(env.DATABASE_URL);
    await store.createPlants([{ id: 1n, name: 'created' }]);
    await store.close();
    assert.deepEqual((await listWebhooks(env)).map((listed) => listed.pending), [1]);
  });

  test(`${backend.name}: stdin is read as it comes and written a batch at a time, each batch one transaction`, async (t) => {
    const url = await existingStoreUrl(t, backend);
    const lines = manyPlants(20_000).map((plant) => `${plantBody(plant.id, plant.name, plant.tag)}\n`);
    const child = spawn(process.execPath, [BIN, 'plants', 'import', '-', '--batch-size', '1000'], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    t.after(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
    const closed = once(child, 'close');
    let stderr = '';
    const firstProgress = new Promise<void>((resolve) => {
      createInterface({ input: child.stderr }).on('line', (line) => {
        stderr += `${line}\n`;
        if (/^plants import \(bytes\): \d+$/.test(line)) resolve();
      });
    });
    child.stdout.resume();
    child.stdin.write(lines.slice(0, 1500).join(''));
    await within('the first batch is reported', firstProgress, 30_000);
    // The next 500 lines wait for a full batch, and the input has no more yet.
    const store = await open(url);
    assert.equal(await store.countPlants(), 1000n);
    child.stdin.end(lines.slice(1500).join(''));
    const [code] = (await within('the import exits', closed, 60_000)) as [number | null];
    assert.equal(code, 0, stderr);
    assert.match(stderr, /plants import: 20000 lines: 20000 created, 0 already present, 0 conflicts, 0 invalid, in 20 transactions\n$/);
    assert.equal(await store.countPlants(), 20_000n);
    await store.close();
  });
}

test('blank lines are skipped wherever they are, CRLF ends a line as LF does, and a last line needs no newline', async (t) => {
  const url = await sqlite.freshUrl(t);
  const result = await runMain(['plants', 'import', '-', '--json'], { DATABASE_URL: url }, '\n{"id":1,"name":"a"}\r\n\r\n \t\n{"id":2,"name":"b"}');
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { lines: 5, created: 2, alreadyPresent: 0, conflicts: 0, invalid: 0, transactions: 1, problems: [] });
  assert.equal(await exported(url), '{"id":1,"name":"a"}\n{"id":2,"name":"b"}\n');
});

test('the first problems are listed and every one counted; --json lists them too', async (t) => {
  const url = await sqlite.freshUrl(t);
  const input = Array.from({ length: 30 }, (_, i) => `{"id":${i},"name":${i}}\n`).join('');
  const result = await runMain(['plants', 'import', '-', '--json'], { DATABASE_URL: url }, input);
  assert.equal(result.code, 1);
  assert.equal(result.stderr.match(/^plants import: line \d+: Invalid plant: name must be a string$/gm)?.length, 20);
  assert.match(result.stderr, /^plants import: 10 more lines not imported, not listed$/m);
  const summary = JSON.parse(result.stdout) as { invalid: number; problems: { line: number; code: string }[] };
  assert.equal(summary.invalid, 30);
  assert.deepEqual(summary.problems.map((problem) => [problem.line, problem.code]), Array.from({ length: 20 }, (_, i) => [i + 1, 'INVALID_PLANT']));
});

test('an input that cannot be read stops the import before it makes a store; a wrong command line exits 2', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'new.db');
  const env = { DATABASE_URL: `sqlite:${path}` };
  const missing = await runMain(['plants', 'import', join(dir, 'no-such.jsonl')], env);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^plantstore: cannot read .*no-such\.jsonl: ENOENT/);
  mkdirSync(join(dir, 'folder'));
  const folder = await runMain(['plants', 'import', join(dir, 'folder')], env);
  assert.equal(folder.code, 1);
  assert.match(folder.stderr, /cannot read .*folder: it is a directory\n$/);
  assert.equal(existsSync(path), false, 'no store made');

  for (const [args, stderr] of [
    [['plants', 'import'], 'plantstore: plants import needs the FILE to read, or - for stdin\n'],
    [['plants', 'import', '-', '--batch-size', '0'], 'plantstore: --batch-size must be a whole number from 1 to 100000, got "0"\n'],
    [['plants', 'import', 'a', 'b'], 'plantstore: unexpected argument "b"\n'],
    [['plants', 'grow'], 'plantstore: unknown plants subcommand "grow"; expected export or import\n'],
  ] as const) {
    assert.deepEqual(await runMain(args, env), { code: 2, stdout: '', stderr }, args.join(' '));
  }
});
