import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from '../../../test/helpers/temp-dir.js';
import { testApp } from '../../../test/helpers/test-app.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
// The compiler npm run build uses: TypeScript 7's, which reports what TypeScript 5 does, in a tenth of the time.
const TSC = join(ROOT, 'node_modules/typescript-native/bin/tsc');

/** A program as a user of the package writes it; the lines marked @ts-expect-error must fail to compile. */
const PROGRAM = `
import { type Plant, PlantStoreClient, PlantStoreError } from 'plantstore-client';

const client = new PlantStoreClient({ baseUrl: process.argv[2]!, token: process.argv[3]!, retry: { retries: 2 } });
const plant: Plant = await client.createPlant({ id: 9007199254740993n, name: 'Monstera', tag: 'aroid' });
const again = await client.createPlant({ id: '9007199254740993', name: 'Monstera', tag: 'aroid' }, { signal: AbortSignal.timeout(5000) });
try {
  await client.createPlant({ id: 9007199254740993n, name: 'Fern' });
} catch (error) {
  if (!(error instanceof PlantStoreError)) throw error;
  const conflict: boolean = error.code === 'PLANT_CONFLICT';
  console.log(JSON.stringify({ plant, again, status: error.status, code: error.code, conflict, retryAfter: error.retryAfter ?? null }));
}

// @ts-expect-error a plant needs a name
await client.createPlant({ id: 1n }).catch(() => undefined);
// @ts-expect-error an id is a bigint, a decimal string or a number
await client.createPlant({ id: true, name: 'x' }).catch(() => undefined);
// @ts-expect-error the answer has no id
void plant.id;
`;

// process.argv, here only, comes from a one-line declaration: the package itself needs nothing of Node's types.
const NODE_ARGV = 'declare const process: { argv: string[] };\n';

test('package.json is ready to publish: what is packed, its entry points and types, licence, repository folder, description and engines', () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'packages/client/package.json'), 'utf8')) as Record<string, any>;
  assert.deepEqual(manifest['files'], ['dist']);
  assert.deepEqual(manifest['exports'], { '.': { types: './dist/index.d.ts', default: './dist/index.js' } });
  assert.equal(manifest['types'], './dist/index.d.ts');
  assert.equal(manifest['type'], 'module');
  assert.equal(manifest['license'], 'MIT');
  assert.deepEqual([manifest['repository']?.type, manifest['repository']?.directory], ['git', 'packages/client']);
  assert.ok(typeof manifest['description'] === 'string' && manifest['description'].length > 20);
  assert.match(String(manifest['engines']?.node), /^>=\d+/);
  assert.equal(manifest['private'], undefined, 'not marked private');
  assert.equal(manifest['dependencies'], undefined, 'no runtime dependency');
});

test('the packed package installs into an empty project, compiles under tsc --strict without Node types, and creates a plant', async (t) => {
  const dir = tempDir(t);
  const [packed] = JSON.parse((await run('npm', ['pack', '--workspace', 'plantstore-client', '--json', '--pack-destination', dir], { cwd: ROOT })).stdout) as {
    filename: string;
    files: { path: string }[];
  }[];
  const files = packed!.files.map((file) => file.path).sort();
  assert.ok(files.includes('dist/index.js') && files.includes('dist/index.d.ts'), files.join(' '));
  assert.deepEqual(
    files.filter((file) => !file.startsWith('dist/')),
    ['README.md', 'package.json'],
    'only the build, its README and package.json',
  );

  const project = join(dir, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'empty', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(dir, packed!.filename)], { cwd: project });
  const installed = JSON.parse(readFileSync(join(project, 'node_modules/plantstore-client/package.json'), 'utf8')) as { dependencies?: unknown };
  assert.equal(installed.dependencies, undefined, 'no runtime dependency');

  writeFileSync(join(project, 'main.ts'), NODE_ARGV + PROGRAM);
  const compiled = await run(process.execPath, [TSC, '--strict', '--module', 'nodenext', '--target', 'es2022', '--outDir', 'out', 'main.ts'], { cwd: project }).catch(
    (error: { stdout: string }) => assert.fail(`tsc --strict: ${error.stdout}`),
  );
  assert.equal(compiled.stdout, '');

  const { url, token } = await (async () => {
    const served = await testApp(t);
    return { url: await served.app.listen({ host: '127.0.0.1', port: 0 }), token: served.token };
  })();
  const { stdout } = await run(process.execPath, [join(project, 'out/main.js'), url, token]);
  assert.deepEqual(JSON.parse(stdout), {
    plant: { name: 'Monstera', tag: 'aroid' },
    again: { name: 'Monstera', tag: 'aroid' },
    status: 409,
    code: 'PLANT_CONFLICT',
    conflict: true,
    retryAfter: null,
  });
});
