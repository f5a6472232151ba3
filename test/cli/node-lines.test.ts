import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { checkNodeLine, OLDEST_NODE, SUPPORTED_NODE_LINES } from '../../src/node-lines.js';
import { sqlite } from '../helpers/backends.js';
import { runMain } from '../helpers/in-process-cli.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';

const refusal = (version: string) =>
  `Node.js ${version} is not supported: the plant store runs on Node.js 22, 24, 26 (22.19.0 or newer); ` +
  'install one from https://nodejs.org, or in a checkout put one first on PATH: PATH="$(scripts/node-line.sh 26)/bin:$PATH" (docs/operations.md, "Supported Node.js")';

test('Node.js 22 from 22.19, 24 and 26 run the service; older releases and the odd lines between are refused; newer lines warn', () => {
  for (const version of ['22.19.0', '22.23.5', '24.0.0', '24.22.3', '26.12.1']) assert.equal(checkNodeLine(version), undefined, version);
  for (const version of ['18.20.4', '20.20.2', '21.7.3', '22.12.0', '22.18.9', '23.11.0', '25.2.1']) {
    assert.deepEqual(checkNodeLine(version), { refuse: refusal(version) }, version);
  }
  for (const version of ['27.0.0', '28.1.0']) {
    assert.deepEqual(checkNodeLine(version), {
      warn: `Node.js ${version} is newer than the lines this version is tested on (22, 24, 26); running on it (docs/operations.md, "Supported Node.js")`,
    });
  }
});

test('engines in package.json, the README and the table of docs/operations.md name the lines the start check runs on', () => {
  const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
  const [lowest, ...others] = SUPPORTED_NODE_LINES;
  const newest = others.pop();
  const engines = [`^${OLDEST_NODE}`, ...others.map((line) => `^${line}.0.0`), `>=${newest}.0.0`].join(' || ');
  assert.equal((JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node, engines);
  const minor = OLDEST_NODE.split('.').slice(0, 2).join('.');
  assert.ok(read('README.md').includes(`Node.js ${lowest} (${minor} or newer), ${others.join(', ')} or ${newest}`), 'the README names the lines');
  const table = read('docs/operations.md');
  for (const line of SUPPORTED_NODE_LINES) assert.match(table, new RegExp(`^\\| ${line} \\| (yes|from ${minor.replace('.', '\\.')})`, 'm'), `docs/operations.md: ${line}`);
});

test('on Node.js 20 every command exits 1 with that one line and creates nothing', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  for (const args of [['token', 'create', '--name', 'x'], ['plants', 'export'], ['schema'], ['serve'], ['--version']]) {
    const refused = await runMain(args, env, '', '20.20.2');
    assert.deepEqual(refused, { code: 1, stdout: '', stderr: `plantstore: ${refusal('20.20.2')}\n` }, args.join(' '));
  }
  assert.equal(existsSync(env.DATABASE_URL.slice('sqlite:'.length)), false, 'no store was made');
});

test('on a line newer than 26 a command warns once and runs', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const created = await runMain(['token', 'create', '--name', 'newer'], env, '', '28.1.0');
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /^\S+\n$/, 'the token');
  assert.equal(created.stderr.split('\n').filter((line) => line.includes('warning: Node.js 28.1.0 is newer')).length, 1, created.stderr);
});

/** The machine's own Node.js when it is older than 22: a development machine's or CI's. */
function olderNode(): string | undefined {
  for (const path of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(path)) continue;
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
    if (Number.parseInt(version.slice(1), 10) < 22) return path;
  }
  return undefined;
}

test('bin/plantstore run by an older Node.js exits 1 with the one line, before it loads anything that line cannot run', (t) => {
  const node = olderNode();
  if (!requireOrSkip(t, 'no Node.js older than 22 at /usr/bin/node or /usr/local/bin/node', node !== undefined) || node === undefined) return;
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().slice(1);
  const path = `${process.env['TMPDIR'] ?? '/tmp'}/plantstore-old-node-${process.pid}.db`;
  const run = spawnSync(node, ['bin/plantstore', 'token', 'create', '--name', 'x'], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '', DATABASE_URL: `sqlite:${path}` },
    timeout: 30_000,
  });
  assert.deepEqual({ code: run.status, stdout: run.stdout, stderr: run.stderr }, { code: 1, stdout: '', stderr: `plantstore: ${refusal(version)}\n` });
  assert.equal(existsSync(path), false, 'no store was made');
});
