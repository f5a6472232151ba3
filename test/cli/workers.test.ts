import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { createToken, runCli, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

test('serve --workers 2 runs two processes on one port and stops them all on SIGTERM', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  const server = await startServer(t, env, ['--workers', '2']);
  const listening = () => server.logs.filter((line) => String(line['msg']).startsWith('Server listening at'));
  await until('two workers listen', () => listening().length === 2);
  const pids = new Set(listening().map((line) => line['pid']));
  assert.equal(pids.size, 2, 'two workers listen');
  assert.ok(!pids.has(server.child.pid), 'the primary itself does not serve');

  // Each request on a connection of its own: the primary deals connections to the workers in turn.
  const responses = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', connection: 'close' },
        body: `{"id":${i},"name":"w"}`,
      }),
    ),
  );
  assert.deepEqual(new Set(responses.map((response) => response.status)), new Set([200]));
  const serving = () => new Set(server.logs.filter((line) => line['msg'] === 'request').map((line) => line['pid']));
  await until('the access lines of all twenty are written', () => server.logs.filter((line) => line['msg'] === 'request').length === 20);
  assert.deepEqual(serving(), pids, 'both workers served');
  assert.equal(await server.stop('SIGTERM'), 0);
  const exported = await runCli(['plants', 'export'], env);
  assert.equal(exported.stdout.trimEnd().split('\n').length, 20);
});

test('serve --workers 3 with no token logs how to create one once, not once a worker', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env, ['--workers', '3']);
  const listening = () => server.logs.filter((line) => String(line['msg']).startsWith('Server listening at'));
  await until('three workers listen', () => listening().length === 3);
  const hints = server.logs.filter((line) => String(line['msg']).includes('no API token exists yet'));
  assert.equal(hints.length, 1);
});
