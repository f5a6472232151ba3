import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type TestContext, test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { createToken, runCli, startServer } from '../helpers/processes.js';
import { rawConnection } from '../helpers/raw-http.js';

async function setUp(t: TestContext, env: Record<string, string> = {}) {
  const database = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(database, 'ci');
  const server = await startServer(t, { ...database, ...env });
  const { hostname, port } = new URL(server.url);
  // Refused and cut connections are expected here: an error only closes the connection.
  const open = () => rawConnection(Number(port), hostname, { ignoreErrors: true });
  return { database, token, server, open };
}

function startPost(socket: Socket, token: string, body: string, sent: number): void {
  socket.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, sent)}`,
  );
}

test('on SIGTERM a request in flight is finished and stored, new connections are refused, and the exit code is 0', async (t) => {
  const { database, token, server, open } = await setUp(t);
  const inFlight = open();
  const body = '{"id":42,"name":"finished during shutdown"}';
  startPost(inFlight.socket, token, body, 10);
  await sleep(200);
  server.child.kill('SIGTERM');
  await sleep(300);
  assert.equal(server.child.exitCode, null, 'still running for the request in flight');
  const late = open();
  await late.closed;
  assert.equal(late.received(), '', 'a new connection is not served');

  inFlight.socket.write(body.slice(10));
  await inFlight.closed;
  assert.match(inFlight.received(), /^HTTP\/1\.1 200 OK\r\n/);
  assert.ok(inFlight.received().endsWith('{"name":"finished during shutdown"}'));
  assert.equal(await server.stop('SIGTERM'), 0);
  assert.equal((await runCli(['plants', 'export'], database)).stdout, '{"id":42,"name":"finished during shutdown"}\n');
});

test('a request that outlives the grace period is cut off, and the server still exits 0', async (t) => {
  const { token, server, open } = await setUp(t, { SHUTDOWN_GRACE_MS: '300' });
  const stuck = open();
  startPost(stuck.socket, token, '{"id":1,"name":"never finished"}', 5);
  await sleep(200);
  const started = Date.now();
  assert.equal(await server.stop('SIGTERM'), 0);
  assert.ok(Date.now() - started < 5000, 'the grace period bounds the stop');
  await stuck.closed;
});

test('a client that sends its headers too slowly gets 408 and is disconnected', async (t) => {
  const { open } = await setUp(t, { HEADERS_TIMEOUT_MS: '500' });
  const slow = open();
  slow.socket.write('POST /plants HTTP/1.1\r\nHost: x\r\n');
  const drip = setInterval(() => slow.socket.write('X-Drip: 1\r\n'), 100);
  await slow.closed;
  clearInterval(drip);
  assert.match(slow.received(), /^HTTP\/1\.1 408 Request Timeout\r\n/);
  assert.ok(slow.received().endsWith('{"error":408,"message":"The request was not received in time"}'));
});

test('a client that sends its body too slowly gets 408 and is disconnected', async (t) => {
  const { token, open } = await setUp(t, { REQUEST_TIMEOUT_MS: '700' });
  const slow = open();
  startPost(slow.socket, token, '{"id":1,"name":"slow body"}', 3);
  await slow.closed;
  assert.match(slow.received(), /^HTTP\/1\.1 408 /);
});

test('connections past MAX_CONNECTIONS are closed at once, and the ones within are served', async (t) => {
  const { server, open } = await setUp(t, { MAX_CONNECTIONS: '2' });
  const held = [open(), open()];
  await sleep(200);
  const extra = open();
  await extra.closed;
  assert.equal(extra.received(), '');
  for (const connection of held) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  await Promise.all(held.map((connection) => connection.closed));
  for (const connection of held) assert.match(connection.received(), /^HTTP\/1\.1 200 OK/);
  assert.equal(server.child.exitCode, null);
});
