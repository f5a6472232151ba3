import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { type TestContext, test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { createToken, runCli, startServer } from '../helpers/processes.js';
import { CONNECTIONS_CHECK_INTERVAL_MS } from '../../src/app.js';
import { connectionRefused, type RawConnection, rawConnection } from '../helpers/raw-http.js';
import { until } from '../helpers/until.js';

async function setUp(t: TestContext, env: Record<string, string> = {}) {
  const database = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(database, 'ci');
  const server = await startServer(t, { ...database, ...env });
  const { hostname, port } = new URL(server.url);
  // Refused and cut connections are expected here: an error only closes the connection.
  const open = () => rawConnection(Number(port), hostname, { ignoreErrors: true });
  return { database, token, server, open };
}

function startPost(socket: Socket, token: string, body: string, sent: number, headers = ''): void {
  socket.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body.slice(0, sent)}`,
  );
}

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

/**
 * Starts a POST whose body stops after `sent` bytes, and resolves once the
 * server is working on it: it asks for `Expect: 100-continue`, which
 * node:http answers as it hands the request to the application.
 */
async function startPostInFlight(connection: RawConnection, token: string, body: string, sent: number): Promise<void> {
  startPost(connection.socket, token, body, sent, 'Expect: 100-continue\r\n');
  await until('the server works on the request', () => connection.received().startsWith(CONTINUE));
}

/** The answer after the 100 Continue. */
const answer = (connection: RawConnection) => connection.received().slice(CONTINUE.length);

test('on SIGTERM a request in flight is finished and stored, new connections are refused, and the exit code is 0', async (t) => {
  const { database, token, server, open } = await setUp(t);
  const inFlight = open();
  const body = '{"id":42,"name":"finished during shutdown"}';
  await startPostInFlight(inFlight, token, body, 10);
  const stopped = server.stop('SIGTERM');
  const { port } = new URL(server.url);
  await until('new connections are refused', () => connectionRefused(Number(port)));
  assert.equal(server.child.exitCode, null, 'still running for the request in flight');

  inFlight.socket.write(body.slice(10));
  await inFlight.closed;
  assert.match(answer(inFlight), /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(answer(inFlight), /\r\nConnection: close\r\n/i);
  assert.ok(answer(inFlight).endsWith('{"name":"finished during shutdown"}'));
  const answered = Date.now();
  assert.equal(await stopped, 0);
  assert.ok(Date.now() - answered < 1000, `exited ${Date.now() - answered} ms after the last answer`);
  assert.equal((await runCli(['plants', 'export'], database)).stdout, '{"id":42,"name":"finished during shutdown"}\n');
});

test('on SIGTERM readiness fails at once, creates go on for SHUTDOWN_DELAY_MS, then every connection closes after its answer and the process exits without waiting out the grace', async (t) => {
  const delayMs = 1000;
  const { database, token, server, open } = await setUp(t, { SHUTDOWN_DELAY_MS: String(delayMs), SHUTDOWN_GRACE_MS: '30000' });
  const logged = (msg: string) => () => server.logs.some((line) => line['msg'] === msg);
  const idle = open();
  idle.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await until('the keep-alive connection is answered', () => idle.received().endsWith('{"status":"ok"}'));
  assert.match(idle.received(), /\r\nConnection: keep-alive\r\n/i);
  const inFlight = open();
  const body = '{"id":7,"name":"answered while stopping"}';
  startPost(inFlight.socket, token, body, 10);

  const signalled = Date.now();
  const stopped = server.stop('SIGTERM');
  await until('the stop begins', logged('stopping: not ready, serving for the shutdown delay'));
  const ready = await fetch(`${server.url}/readyz`);
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), { error: 503, message: 'The server is stopping; send to another instance', code: 'STOPPING' });
  const during = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"id":8,"name":"created during the delay"}',
  });
  assert.equal(during.status, 200);

  await until('the listener closes', logged('shutting down: finishing requests in flight'));
  assert.ok(Date.now() - signalled >= delayMs, 'served for the whole delay');
  await until('the idle keep-alive connection is closed', () => idle.socket.destroyed || idle.socket.readableEnded);
  inFlight.socket.write(body.slice(10));
  await inFlight.closed;
  assert.match(inFlight.received(), /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(inFlight.received(), /\r\nConnection: close\r\n/i, 'the answer in flight says the connection closes');

  assert.equal(await stopped, 0);
  const took = Date.now() - signalled;
  assert.ok(took < delayMs + 3000, `exited ${took} ms after SIGTERM, far within the 30 s grace`);
  const exported = (await runCli(['plants', 'export'], database)).stdout;
  assert.equal(exported, '{"id":7,"name":"answered while stopping"}\n{"id":8,"name":"created during the delay"}\n');
});

test('a request that outlives the grace period is cut off after the grace, nothing of it answered or stored, and the server exits 0', async (t) => {
  const graceMs = 500;
  const { database, token, server, open } = await setUp(t, { SHUTDOWN_GRACE_MS: String(graceMs) });
  const stuck = open();
  await startPostInFlight(stuck, token, '{"id":1,"name":"never finished"}', 5);
  const started = Date.now();
  assert.equal(await server.stop('SIGTERM'), 0);
  const took = Date.now() - started;
  assert.ok(took >= graceMs, `stopped after ${took} ms: the request was given the grace`);
  assert.ok(took < graceMs + 3000, `stopped after ${took} ms: the grace bounds the stop`);
  assert.ok(server.logs.some((line) => line['msg'] === 'the grace period is over: closing the connections still open'), 'the grace path was taken');
  await stuck.closed;
  assert.equal(answer(stuck), '', 'nothing was answered');
  assert.equal((await runCli(['plants', 'export'], database)).stdout, '', 'nothing was stored');
});

/** A 408 comes after its deadline, within node:http's check interval and some slack for a loaded machine. */
async function assertCutOffWithin(connection: { closed: Promise<void>; received(): string }, opened: number, timeoutMs: number): Promise<void> {
  await connection.closed;
  const took = Date.now() - opened;
  assert.match(connection.received(), /^HTTP\/1\.1 408 Request Timeout\r\n/);
  assert.ok(connection.received().endsWith('{"error":408,"message":"The request was not received in time","code":"REQUEST_TIMEOUT"}'));
  assert.ok(took >= timeoutMs - 50, `cut off after ${took} ms, not before the ${timeoutMs} ms timeout`);
  assert.ok(took <= timeoutMs + CONNECTIONS_CHECK_INTERVAL_MS + 1000, `cut off after ${took} ms, within the ${timeoutMs} ms timeout and the check`);
}

test('a client that sends its headers too slowly gets 408 within HEADERS_TIMEOUT_MS and the check interval', async (t) => {
  const { open } = await setUp(t, { HEADERS_TIMEOUT_MS: '500' });
  const slow = open();
  const opened = Date.now();
  slow.socket.write('POST /plants HTTP/1.1\r\nHost: x\r\n');
  const drip = setInterval(() => slow.socket.write('X-Drip: 1\r\n'), 100);
  t.after(() => clearInterval(drip));
  await assertCutOffWithin(slow, opened, 500);
});

test('REQUEST_TIMEOUT_MS below the default HEADERS_TIMEOUT_MS cuts a dripping body off within REQUEST_TIMEOUT_MS and the check interval', async (t) => {
  // The regression: with REQUEST_TIMEOUT_MS=700 and HEADERS_TIMEOUT_MS=10000 the 408 came after 11 to 12 s.
  const { token, open } = await setUp(t, { REQUEST_TIMEOUT_MS: '700' });
  const slow = open();
  const opened = Date.now();
  startPost(slow.socket, token, '{"id":1,"name":"slow body"}', 3);
  const drip = setInterval(() => slow.socket.write(' '), 100);
  t.after(() => clearInterval(drip));
  await assertCutOffWithin(slow, opened, 700);
  const shown = await runCli(['config'], { REQUEST_TIMEOUT_MS: '700' });
  assert.match(shown.stdout, /\nHEADERS_TIMEOUT_MS=700\n/, 'the headers deadline in force is the request one');
});

test('connections past MAX_CONNECTIONS are closed at once and counted, and the ones within are served', async (t) => {
  const { server, open } = await setUp(t, { MAX_CONNECTIONS: '2' });
  const held = [open(), open()];
  // Each answered once, so both are counted before the third arrives.
  for (const connection of held) {
    connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await until('a held connection is answered', () => connection.received().endsWith('{"status":"ok"}'));
  }
  const extra = open();
  await extra.closed;
  assert.equal(extra.received(), '');
  held[0]!.socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
  await until('the refusal is counted', () => held[0]!.received().includes('\nplantstore_connections_refused_total{limit="max_connections"} 1\n'));
  for (const connection of held) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  await Promise.all(held.map((connection) => connection.closed));
  assert.deepEqual(
    held.map((connection) => connection.received().match(/HTTP\/1\.1 200 OK/g)?.length),
    [3, 2],
  );
  assert.equal(server.child.exitCode, null);
});
