import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { generateToken } from '../../src/tokens/api-token.js';
import { sqlite } from '../helpers/backends.js';
import { BIN, createToken, runInProcess, startServer } from '../helpers/processes.js';
import { within } from '../helpers/until.js';

test('logs: one access line per request with its request id, start and stop lines, and never a token', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t), LOG_LEVEL: 'trace', METRICS_TOKEN: 'metrics-secret-value', AUTH_FAILURE_LIMIT: '2' };
  const token = await createToken(env, 'logged');
  const server = await startServer(t, env);
  const unknown = generateToken();
  const requests: [string | undefined, string][] = [
    [token, '{"id":1,"name":"a"}'],
    [unknown, '{"id":2,"name":"b"}'],
    [`${token}x`, '{"id":3,"name":"c"}'],
    [unknown, '{"id":4,"name":"d"}'],
    [undefined, '{"id":5,"name":"e"}'],
  ];
  for (const [index, [presented, body]] of requests.entries()) {
    await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': `call-${index}`, ...(presented ? { authorization: `Bearer ${presented}` } : {}) },
      body,
    });
  }
  await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer metrics-secret-value' } });
  assert.equal(await server.stop('SIGTERM'), 0);
  const text = server.logs.map((line) => JSON.stringify(line)).join('\n');

  for (const secret of [token, unknown, `${token}x`, 'metrics-secret-value']) {
    assert.ok(!text.includes(secret), 'no token in any log line');
  }
  assert.ok(!/authorization/i.test(text), 'no Authorization header in any log line');

  const access = server.logs.filter((line) => line['msg'] === 'request');
  assert.equal(access.length, requests.length + 1, 'one access line per request');
  assert.deepEqual(
    access.map((line) => [line['method'], line['path'], line['status'], line['token']]),
    [
      ['POST', '/plants', 200, 'logged'],
      ['POST', '/plants', 401, undefined],
      ['POST', '/plants', 401, undefined],
      ['POST', '/plants', 429, undefined],
      ['POST', '/plants', 429, undefined],
      ['GET', '/metrics', 200, undefined],
    ],
  );
  for (const line of access) assert.equal(typeof line['durationMs'], 'number');
  assert.deepEqual(access.slice(0, 5).map((line) => line['reqId']), ['call-0', 'call-1', 'call-2', 'call-3', 'call-4']);
  const refused = server.logs.find((line) => line['msg'] === 'bearer token refused');
  assert.equal(refused?.['reqId'], 'call-1', 'every line of a request carries its id');

  const start = server.logs.find((line) => line['msg'] === 'plantstore serving') as { config: Record<string, string> } | undefined;
  assert.equal(start?.config['METRICS_TOKEN'], '*****');
  assert.equal(start?.config['LOG_LEVEL'], 'trace');
  assert.ok(server.logs.some((line) => line['msg'] === 'stopped'));
});

test('logs: lines still gathered when the process exits are written, not lost', async (t) => {
  // No request and no open connection: the process exits right after its stop line, before any periodic flush.
  const server = await startServer(t, { DATABASE_URL: await sqlite.freshUrl(t) });
  assert.equal(await server.stop('SIGTERM'), 0);
  const messages = server.logs.map((line) => line['msg']);
  assert.ok(messages.includes('shutting down: finishing requests in flight'), 'the stop began');
  assert.equal(messages.at(-1), 'stopped', 'the last line, written as the process exits, is there');
});

test('logs: at a terminal the lines are written for a person to read, not as JSON', async (t) => {
  // script(1) runs the server on a pseudo-terminal, as when an operator starts it by hand.
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
  // The server is stopped once its start line is out, however long a loaded machine takes to get there.
  const command = ['timeout', '-s', 'TERM', '60', process.execPath, BIN, 'serve', '--port', '0'].map(quote).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    env: { ...process.env, DATABASE_URL: await sqlite.freshUrl(t) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const closed = once(child, 'close');
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (/plantstore serving/.test(output)) child.kill('SIGTERM');
  });
  await within('the server on a terminal starts and stops', closed, 70_000);
  const lines = output.split(/\r?\n/).filter((line) => line !== '');
  assert.ok(lines.some((line) => /INFO.*plantstore serving/.test(line)), output);
  assert.ok(!lines.some((line) => line.startsWith('{')), 'no JSON line');
});

test('plantstore config prints the effective settings with secrets masked', async () => {
  const shown = await runInProcess(['config', '--port', '9000'], { METRICS_TOKEN: 'very-secret-metrics-token', DATABASE_URL: 'postgres://app:hunter2@db.internal/plants' });
  assert.equal(shown.code, 0);
  assert.match(shown.stdout, /^HOST=127\.0\.0\.1\nPORT=9000\nDATABASE_URL=postgres:\/\/app:\*\*\*\*\*@db\.internal\/plants\n/);
  assert.match(shown.stdout, /\nMETRICS_TOKEN=\*\*\*\*\*\n/);
  assert.ok(!shown.stdout.includes('very-secret') && !shown.stdout.includes('hunter2'));
  const json = JSON.parse((await runInProcess(['config', '--json'])).stdout) as Record<string, string>;
  assert.equal(json['METRICS_TOKEN'], '');
  assert.equal(json['WRITE_BATCH_MAX'], '512');
  const bad = await runInProcess(['config'], { SHUTDOWN_GRACE_MS: 'soon' });
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, 'plantstore: SHUTDOWN_GRACE_MS must be a whole number from 0 to 600000, got "soon"\n');
});
