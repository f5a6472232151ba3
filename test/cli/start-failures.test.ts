import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { BIN, type CliResult, startServer } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until, within } from '../helpers/until.js';

/** Far more than a failed start takes; a primary left waiting by its workers would wait forever. */
const EXIT_WITHIN_MS = 30_000;
/** Who runs a start that permissions must refuse: root may do anything, so as root the test runs it as nobody. */
const NOBODY = { uid: 65534, gid: 65534 };
const asRoot = process.getuid?.() === 0;

/** Runs `plantstore serve ARGS` until it exits, within EXIT_WITHIN_MS, as nobody when `unprivileged` and the test runs as root. */
async function serveToExit(t: TestContext, args: readonly string[], env: Record<string, string>, unprivileged = false): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(unprivileged && asRoot ? NOBODY : {}),
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await within(`plantstore serve ${args.join(' ')} exits`, once(child, 'close'), EXIT_WITHIN_MS)) as [number | null];
  return { code, stdout, stderr };
}

/** Alone and with --workers 2: exit code 1 and `line` alone on stderr, no stack and no JSON; alone, nothing on stdout either. */
async function assertFailsInOneLine(t: TestContext, args: readonly string[], env: Record<string, string>, line: string, unprivileged = false): Promise<void> {
  for (const workers of ['1', '2']) {
    const where = `serve ${args.join(' ')} --workers ${workers}`;
    const result = await serveToExit(t, [...args, '--workers', workers], env, unprivileged);
    assert.equal(result.stderr, `plantstore: ${line}\n`, where);
    assert.doesNotMatch(result.stderr, /^\s+at |[{}]/m, `${where}: no stack, no JSON`);
    assert.equal(result.code, 1, where);
    if (workers === '1') assert.equal(result.stdout, '', `${where}: nothing logged`);
  }
}

/** A folder of the test's own that nobody, the user the unprivileged starts run as, may write in. */
function sharedDir(t: TestContext): string {
  const dir = tempDir(t);
  chmodSync(dir, 0o777);
  return dir;
}

test('a port in use: one line that names it, exit code 1', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => holder.close());
  const { port } = holder.address() as { port: number };
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'plantstore.db')}` };
  await assertFailsInOneLine(t, ['--port', String(port)], env, `port ${port} on 127.0.0.1 is already in use`);
});

test('a port a running plantstore serves on, on every socket it binds: one line, exit code 1', async (t) => {
  const running = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'running.db')}` });
  // Every socket is bound before the start line.
  await until('the running server says it serves', () => running.logs.some((line) => line['msg'] === 'plantstore serving'));
  const { port } = new URL(running.url);
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'plantstore.db')}` };
  await assertFailsInOneLine(t, ['--port', port], env, `port ${port} on 127.0.0.1 is already in use`);
});

test('a port this user may not listen on: one line, exit code 1', async (t) => {
  const unprivilegedFrom = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8'));
  if (unprivilegedFrom <= 80) return t.skip(`any user may listen on port 80 here (net.ipv4.ip_unprivileged_port_start=${unprivilegedFrom})`);
  const env = { DATABASE_URL: `sqlite:${join(sharedDir(t), 'plantstore.db')}` };
  await assertFailsInOneLine(t, ['--port', '80'], env, 'permission denied to listen on port 80 on 127.0.0.1: ports below 1024 need privileges', true);
});

test('a HOST that is not an address of this machine, or is no address at all: one line, exit code 1', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'plantstore.db')}` };
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737), never a machine's own; .invalid never resolves (RFC 6761).
  await assertFailsInOneLine(t, ['--port', '0', '--host', '192.0.2.1'], env, 'HOST 192.0.2.1 is not an address of this machine');
  await assertFailsInOneLine(t, ['--port', '0', '--host', 'plantstore.invalid'], env, 'HOST plantstore.invalid does not resolve to an address');
});

test('a SQLite store whose folder this user cannot write, or that is not a database: one line that names it, exit code 1', async (t) => {
  const dir = sharedDir(t);
  const locked = join(dir, 'locked');
  mkdirSync(locked, { mode: 0o555 });
  chmodSync(locked, 0o555);
  const inLocked = join(locked, 'plantstore.db');
  await assertFailsInOneLine(
    t,
    ['--port', '0'],
    { DATABASE_URL: `sqlite:${inLocked}` },
    `cannot open the SQLite store ${inLocked}: EACCES: permission denied, open '${inLocked}'`,
    true,
  );
  const underLocked = join(locked, 'data', 'plantstore.db');
  await assertFailsInOneLine(
    t,
    ['--port', '0'],
    { DATABASE_URL: `sqlite:${underLocked}` },
    `cannot open the SQLite store ${underLocked}: EACCES: permission denied, mkdir '${join(locked, 'data')}'`,
    true,
  );
  const notADatabase = join(dir, 'notes.txt');
  writeFileSync(notADatabase, 'plants to buy: a fern, a cactus\n'.repeat(200));
  await assertFailsInOneLine(t, ['--port', '0'], { DATABASE_URL: `sqlite:${notADatabase}` }, `cannot open the SQLite store ${notADatabase}: file is not a database`);
});

test('a PostgreSQL server that does not answer at start: one line that names it without its password, exit code 1', async (t) => {
  // Port 1: nothing listens there, so the connection is refused at once.
  const env = { DATABASE_URL: 'postgres://plantstore:p@hunter2@127.0.0.1:1/plants?password=hunter2&sslpassword=keypass' };
  await assertFailsInOneLine(t, ['--port', '0'], env, 'cannot open the PostgreSQL store "plants" on 127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1');
});
