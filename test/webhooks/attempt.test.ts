import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { loadReceiverClient, postMessage, receiverPool } from '../../src/webhooks/post-message.js';

/** What one attempt leaves: the real HTTP exchange with a receiver that answers as `answer` says. */
async function receiver(t: TestContext, answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const sockets = new Set<Socket>();
  const requests: { socket: Socket; body: string; headers: IncomingMessage['headers'] }[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      requests.push({ socket: request.socket, body, headers: request.headers });
      answer(request, response);
    });
  });
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks?team=7`);
  await loadReceiverClient();
  const pool = receiverPool(url, 1);
  t.after(async () => {
    await pool.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const send = (timeoutMs = 5_000) => postMessage(pool, url, { 'webhook-id': 'msg_1' }, '{"type":"plant.created"}', timeoutMs);
  return { url, requests, sockets, send };
}

test('a 2xx answer delivers: the body and headers arrive, and the connection is kept for the next attempt', async (t) => {
  const { requests, send } = await receiver(t, (_request, response) => response.writeHead(204).end());
  assert.deepEqual(await send(), { delivered: true, status: 204 });
  assert.deepEqual(await send(), { delivered: true, status: 204 });
  assert.equal(requests[0]?.body, '{"type":"plant.created"}');
  assert.equal(requests[0]?.headers['webhook-id'], 'msg_1');
  assert.equal(requests[0]?.headers['content-type'], 'application/json');
  assert.equal(requests[0]?.headers['user-agent'], 'plantstore-webhooks');
  assert.equal(requests[1]?.socket, requests[0]?.socket, 'one keep-alive connection');
});

test('an interim 1xx answer is not the outcome: the final answer is', async (t) => {
  const { send } = await receiver(t, (_request, response) => {
    response.writeProcessing();
    response.writeHead(200).end('ok');
  });
  assert.deepEqual(await send(), { delivered: true, status: 200 });
});

test('any other status does not deliver, a redirect included, and the error quotes the start of the answer on one line', async (t) => {
  let status = 500;
  const { send } = await receiver(t, (_request, response) => {
    if (status === 302) response.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
    else response.writeHead(status).end('down\n  for maintenance');
  });
  assert.deepEqual(await send(), { delivered: false, error: 'HTTP 500: down for maintenance' });
  status = 302;
  assert.deepEqual(await send(), { delivered: false, error: 'HTTP 302' }, 'not followed: the subscription names the URL');
});

test('a long answer is read only up to 4 KiB: a 2xx still delivers, an error keeps its first 200 characters, and the connection goes', async (t) => {
  let status = 200;
  const { requests, send } = await receiver(t, (_request, response) => {
    response.writeHead(status);
    // More than a socket buffer holds: the answer cannot have been read whole.
    response.end(`${'é'.repeat(100)}${'x'.repeat(4 * 1024 * 1024)}`);
  });
  assert.deepEqual(await send(), { delivered: true, status: 200 });
  status = 503;
  const refused = await send();
  assert.deepEqual(refused, { delivered: false, error: `HTTP 503: ${'é'.repeat(100)}${'x'.repeat(100)}` });
  assert.notEqual(requests[1]?.socket, requests[0]?.socket, 'the cut connection was not lent again');
});

test('a receiver that never answers ends the attempt at its timeout, and so does an attempt that waits for a connection', async (t) => {
  const { send } = await receiver(t, () => undefined);
  const started = performance.now();
  // The pool has one connection: the second attempt waits behind the first.
  const [first, second] = await Promise.all([send(300), send(300)]);
  const elapsed = performance.now() - started;
  assert.deepEqual(first, { delivered: false, error: 'no answer within 300 ms' });
  assert.deepEqual(second, { delivered: false, error: 'no answer within 300 ms' });
  assert.ok(elapsed >= 290 && elapsed < 2_000, `both ended after ${elapsed.toFixed(0)} ms`);
});

test('an attempt whose connection is never accepted ends at its timeout too, not at the client library\'s connect timeout', async (t) => {
  // A listener that never accepts, its queue of one taken: the kernel drops every further SYN, so a connect hangs.
  const listener = spawn('python3', ['-c', 'import socket, time\ns = socket.socket()\ns.bind(("127.0.0.1", 0))\ns.listen(0)\nprint(s.getsockname()[1], flush=True)\ntime.sleep(60)'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => listener.kill('SIGKILL'));
  const [line] = (await once(listener.stdout!, 'data')) as [Buffer];
  const url = new URL(`http://127.0.0.1:${line.toString().trim()}/hooks`);
  const filler = connect(Number(url.port), '127.0.0.1');
  await once(filler, 'connect');
  t.after(() => filler.destroy());
  await loadReceiverClient();
  const pool = receiverPool(url, 1);
  t.after(() => pool.destroy());
  const started = performance.now();
  const result = await postMessage(pool, url, {}, '{}', 300);
  const elapsed = performance.now() - started;
  assert.deepEqual(result, { delivered: false, error: 'no answer within 300 ms' });
  assert.ok(elapsed >= 290 && elapsed < 2_000, `ended after ${elapsed.toFixed(0)} ms`);
});

test('a receiver that is not there fails the attempt with the system error', async (t) => {
  const { url, send } = await receiver(t, (_request, response) => response.end());
  const gone = createServer();
  await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
  const port = (gone.address() as AddressInfo).port;
  await new Promise((resolve) => gone.close(resolve));
  const closed = new URL(url);
  closed.port = String(port);
  await loadReceiverClient();
  const pool = receiverPool(closed, 1);
  t.after(() => pool.destroy());
  assert.deepEqual(await postMessage(pool, closed, {}, '{}', 5_000), { delivered: false, error: 'ECONNREFUSED' });
  assert.deepEqual(await send(), { delivered: true, status: 200 }, 'the other receiver is unaffected');
});

test('a connection the receiver closes mid-answer fails the attempt in undici words', async (t) => {
  const { send } = await receiver(t, (request) => request.socket.destroy());
  const result = await send();
  assert.equal(result.delivered, false);
  assert.match((result as { error: string }).error, /other side closed|socket hang up|ECONNRESET/);
});
