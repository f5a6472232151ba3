import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { createToken, postPlant, runCli, startServer } from '../helpers/processes.js';

test('serve --workers 2 runs two processes on one port and stops them all on SIGTERM', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'ci');
  const server = await startServer(t, env, ['--workers', '2']);
  const listening = () => server.logs.filter((line) => String(line['msg']).startsWith('Server listening at'));
  for (let i = 0; i < 50 && listening().length < 2; i++) await sleep(100);
  const pids = new Set(listening().map((line) => line['pid']));
  assert.equal(pids.size, 2, 'two workers listen');
  assert.ok(!pids.has(server.child.pid), 'the primary itself does not serve');

  const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => postPlant(server.url, token, `{"id":${i},"name":"w"}`)));
  assert.deepEqual(new Set(responses.map((response) => response.status)), new Set([200]));
  assert.equal(await server.stop('SIGTERM'), 0);
  const exported = await runCli(['plants', 'export'], env);
  assert.equal(exported.stdout.trimEnd().split('\n').length, 20);
});

test('serve --workers 3 with no token logs how to create one once, not once a worker', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env, ['--workers', '3']);
  const listening = () => server.logs.filter((line) => String(line['msg']).startsWith('Server listening at'));
  for (let i = 0; i < 50 && listening().length < 3; i++) await sleep(100);
  assert.equal(listening().length, 3, 'three workers listen');
  const hints = server.logs.filter((line) => String(line['msg']).includes('no API token exists yet'));
  assert.equal(hints.length, 1);
});
