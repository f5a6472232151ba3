import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { within } from '../../../test/helpers/until.js';
import { PlantStoreClient, PlantStoreError } from '../src/index.js';

/** How long a whole call may take here: its attempts, their timeouts and the backoffs between them, on a loaded machine. */
const CALL_TIMEOUT_MS = 10_000;

const fast = { retries: 2, baseDelayMs: 1, maxDelayMs: 50 };

/**
 * A TCP server on 127.0.0.1 that does `onConnection` with each connection,
 * and counts the requests: the connections that sent something (fetch may
 * open a connection it never uses); closed after the test.
 */
async function tcpServer(t: TestContext, onConnection: (socket: Socket) => void): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    socket.once('data', () => (requests += 1));
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, requests: () => requests };
}

/** The PlantStoreError a call rejects with, within the bound. */
async function failure(client: PlantStoreClient): Promise<PlantStoreError> {
  const thrown = await within('the call settles', client.createPlant({ id: 1, name: 'Fern' }).then(() => undefined, (error: unknown) => error), CALL_TIMEOUT_MS);
  assert.ok(thrown instanceof PlantStoreError, `a PlantStoreError, not ${String(thrown)}`);
  return thrown;
}

test('a refused connection rejects with NETWORK_ERROR after the last retry: no status, fetch\'s error as the cause', async () => {
  // A port that was just free: nothing listens there any more.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));

  let attempts = 0;
  const client = new PlantStoreClient({
    baseUrl: `http://127.0.0.1:${port}`,
    token: 'ps_x',
    retry: fast,
    fetch: (target, init) => ((attempts += 1), fetch(target, init)),
  });
  const error = await failure(client);
  assert.deepEqual([error.code, error.status, error.error, error.retryAfter], ['NETWORK_ERROR', undefined, undefined, undefined]);
  assert.ok(error.cause instanceof TypeError, String(error.cause));
  assert.match(error.message, /ECONNREFUSED/);
  assert.equal(attempts, 1 + fast.retries, 'retried: nothing was sent, so sending again is safe');
});

test('a connection reset before the answer rejects with NETWORK_ERROR after the last retry', async (t) => {
  const server = await tcpServer(t, (socket) => socket.once('data', () => socket.resetAndDestroy()));
  const error = await failure(new PlantStoreClient({ baseUrl: server.url, token: 'ps_x', retry: fast }));
  assert.deepEqual([error.code, error.status], ['NETWORK_ERROR', undefined]);
  assert.ok(error.cause instanceof Error);
  assert.equal(server.requests(), 1 + fast.retries, 'retried: the id makes a create safe to send again');
});

test('a server that never answers rejects with TIMEOUT after the last retry, each attempt cut at timeoutMs', async (t) => {
  const timeoutMs = 300;
  // Reads the request and says nothing.
  const server = await tcpServer(t, (socket) => socket.resume());
  const started = performance.now();
  const error = await failure(new PlantStoreClient({ baseUrl: server.url, token: 'ps_x', timeoutMs, retry: { ...fast, retries: 1 } }));
  const took = performance.now() - started;
  assert.deepEqual([error.code, error.status], ['TIMEOUT', undefined]);
  assert.equal(error.message, `No answer from ${server.url}/plants within ${timeoutMs} ms`);
  assert.ok(error.cause instanceof DOMException && error.cause.name === 'TimeoutError', String(error.cause));
  assert.equal(server.requests(), 2);
  assert.ok(took >= 2 * timeoutMs - 20, `two attempts of ${timeoutMs} ms took ${Math.round(took)} ms`);
});

test('an answer that is not the service\'s (a proxy\'s page) rejects with UNEXPECTED_ANSWER and its status', async (t) => {
  const server = await tcpServer(t, (socket) =>
    socket.once('data', () => socket.end('HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: close\r\n\r\n<h1>502</h1>\n')),
  );
  const error = await failure(new PlantStoreClient({ baseUrl: server.url, token: 'ps_x', retry: fast }));
  assert.deepEqual([error.code, error.status, error.error, error.message], ['UNEXPECTED_ANSWER', 502, 502, '502 Bad Gateway']);
  assert.equal(server.requests(), 1, 'a 502 is not retried');
});
