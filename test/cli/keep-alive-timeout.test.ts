import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CONNECTIONS_CHECK_INTERVAL_MS } from '../../src/app.js';
import { sqlite } from '../helpers/backends.js';
import { startServer } from '../helpers/processes.js';
import { rawConnection } from '../helpers/raw-http.js';
import { until } from '../helpers/until.js';

const KEEP_ALIVE_MS = 2000;
const HEADERS_TIMEOUT_MS = 200;
/** node:http keeps an idle connection a second past its keepAliveTimeout (its HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER). */
const NODE_BUFFER_MS = 1000;
/** Room for a loaded machine. */
const SLACK_MS = 4000;

test('an idle keep-alive connection is closed by the server after KEEP_ALIVE_TIMEOUT_MS, and a request after an idle spell longer than HEADERS_TIMEOUT_MS is served', async (t) => {
  const server = await startServer(t, {
    DATABASE_URL: await sqlite.freshUrl(t),
    KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
    HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  });
  const { hostname, port } = new URL(server.url);
  const connection = rawConnection(Number(port), hostname);
  const answers = () => connection.received().match(/HTTP\/1\.1 200 OK/g)?.length ?? 0;

  connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await until('the first request is answered', () => answers() === 1);
  assert.match(connection.received(), /\r\nKeep-Alive: timeout=2\r\n/i, 'clients are told the timeout in whole seconds');
  // Idle past the headers' deadline and one check of node:http's timeouts: the wait is what is tested.
  // A connection opened meanwhile that sends nothing is cut in that time, so the wait is long enough.
  const silent = rawConnection(Number(port), hostname);
  await sleep(HEADERS_TIMEOUT_MS + CONNECTIONS_CHECK_INTERVAL_MS + 600);
  assert.match(silent.received(), /^HTTP\/1\.1 408 /, 'a connection without a request is cut at HEADERS_TIMEOUT_MS');
  connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await until('the request after the idle spell is answered', () => answers() === 2);
  const answered = Date.now();
  assert.ok(!connection.received().includes(' 408 '), 'the idle time did not count against the headers');

  await connection.closed;
  const idle = Date.now() - answered;
  assert.ok(idle >= KEEP_ALIVE_MS - 50, `closed after ${idle} ms, before KEEP_ALIVE_TIMEOUT_MS`);
  assert.ok(idle <= KEEP_ALIVE_MS + NODE_BUFFER_MS + SLACK_MS, `closed after ${idle} ms`);
});
