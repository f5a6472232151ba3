import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { type TestContext, test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { BIN, createToken, runCli, startServer } from '../helpers/processes.js';
import { createRequest } from '../helpers/http-answers.js';
import { rawExchange } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until, within } from '../helpers/until.js';

/** Far more than a start takes (under a second here); a primary left waiting by its workers would wait forever. */
const EXIT_WITHIN_MS = 20_000;

/**
 * Runs `plantstore serve` to its exit, which must come within EXIT_WITHIN_MS;
 * resolves its exit code and its log lines. Killed after the test if it is still running.
 */
async function serveUntilExit(t: TestContext, args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; logs: Record<string, unknown>[]; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    // The primary and, when it is still running, every worker it forked (its process group is the test's).
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await within(`plantstore serve ${args.join(' ')} exits`, once(child, 'close'), EXIT_WITHIN_MS)) as [number | null];
  return { code, logs: stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>), stderr };
}

/** A port some other program listens on. */
async function takenPort(t: TestContext): Promise<number> {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => holder.close());
  return (holder.address() as { port: number }).port;
}

test('a worker that cannot open the store stops the primary with exit code 1, instead of leaving it waiting', async (t) => {
  // A file where the store's folder should be: every worker fails before it listens.
  const blocker = join(tempDir(t), 'not-a-folder');
  writeFileSync(blocker, '');
  const { code, logs } = await serveUntilExit(t, ['--workers', '2', '--port', '0'], { DATABASE_URL: `sqlite:${join(blocker, 'plantstore.db')}` });
  assert.equal(code, 1);
  assert.ok(logs.some((line) => line['msg'] === 'a worker failed to start; stopping' && line['level'] === 60), JSON.stringify(logs));
});

test('a taken port: serve exits with code 1 and says why in one line, alone or with workers', async (t) => {
  const port = await takenPort(t);
  for (const workers of ['1', '2']) {
    const { code, logs, stderr } = await serveUntilExit(t, ['--workers', workers, '--port', String(port)], { DATABASE_URL: await sqlite.freshUrl(t) });
    assert.equal(code, 1, `--workers ${workers}`);
    assert.equal(stderr, `plantstore: port ${port} on 127.0.0.1 is already in use\n`, `--workers ${workers}`);
    if (workers === '2') {
      const fatal = logs.find((line) => line['msg'] === 'a worker failed to start; stopping');
      assert.equal(fatal?.['reason'], `port ${port} on 127.0.0.1 is already in use`, JSON.stringify(logs));
    }
  }
});

test('a worker killed with SIGKILL is replaced by one that listens on the port and serves, the primary naming it by workerPid rather than a second pid key, and SIGTERM still stops them all with exit code 0', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  const server = await startServer(t, env, ['--workers', '2']);
  const listening = () => server.logs.filter((line) => String(line['msg']).startsWith('Server listening at'));
  await until('both workers listen', () => listening().length === 2);
  const [victim, survivor] = listening().map((line) => line['pid'] as number);

  process.kill(victim!, 'SIGKILL');
  await until('the primary sees the worker die', () => server.logs.some((line) => line['msg'] === 'a worker died; starting another'));
  const died = server.logs.find((line) => line['msg'] === 'a worker died; starting another')!;
  assert.deepEqual([died['pid'], died['workerPid'], died['signal']], [server.child.pid, victim, 'SIGKILL'], 'the primary names the dead worker by workerPid, its own pid stays pid');
  await until('a new worker listens', () => listening().length === 3);
  const replacement = listening()[2]!;
  assert.ok(![victim, survivor, server.child.pid].includes(replacement['pid'] as number), 'a new process');
  assert.equal(String(replacement['msg']), `Server listening at ${server.url}`, 'on the same port');

  // Each create on a connection of its own: the primary deals connections to the workers in turn.
  const { port } = new URL(server.url);
  let id = 0;
  const create = async () => {
    const answer = await rawExchange(Number(port), createRequest(token, `{"id":${++id},"name":"after the kill"}`, { headers: { Connection: 'close' } }));
    assert.match(answer, /^HTTP\/1\.1 200 /);
  };
  await until('the new worker has answered a create', async () => {
    await create();
    return server.logs.some((line) => line['msg'] === 'request' && line['pid'] === replacement['pid']);
  });

  assert.equal(await server.stop('SIGTERM'), 0);
  const exported = await runCli(['plants', 'export'], env);
  assert.equal(exported.stdout.trimEnd().split('\n').length, id, 'every create answered 200 is stored');
});

test('SIGTERM while the workers still start stops the primary with exit code 0: a worker ended before it listened has served nothing', async (t) => {
  const child = spawn(process.execPath, [BIN, 'serve', '--workers', '2', '--port', '0'], {
    env: { ...process.env, LOG_LEVEL: 'info', DATABASE_URL: await sqlite.freshUrl(t) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  child.stderr.resume();
  // The primary's first line comes as it forks: its workers are then still loading, before any signal handler of theirs.
  createInterface({ input: child.stdout }).once('line', () => child.kill('SIGTERM'));
  const [code] = (await within('the primary exits after SIGTERM', once(child, 'close'), EXIT_WITHIN_MS)) as [number | null];
  assert.equal(code, 0);
});
