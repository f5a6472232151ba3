import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { type TestContext, test } from 'node:test';
import { errorCatalogue } from '../../src/errors.js';
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresReachable } from '../helpers/postgres.js';
import { startServer } from '../helpers/processes.js';
import { until, within } from '../helpers/until.js';

/** How long readiness waits for the store (src/http/fastify/system-routes.ts). */
const READY_TIMEOUT_MS = 1000;
/** Timers may fire a millisecond early by the client's clock; a loaded machine may answer some 100 ms late. */
const EARLY_MS = 10;
const LATE_MS = 700;

/**
 * A TCP proxy to the database that can freeze: the connections stay open and
 * whatever is sent waits, unanswered, as when the network drops packets or
 * the database stalls. `thaw()` delivers what waited.
 */
async function freezingProxy(t: TestContext, target: { host: string; port: number }): Promise<{ port: number; freeze(): void; thaw(): void }> {
  let frozen = false;
  const waiting: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const forward = (from: Socket, to: Socket) =>
    from.on('data', (chunk: Buffer) => (frozen ? waiting.push(() => to.write(chunk)) : to.write(chunk)));
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    forward(client, upstream);
    forward(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.close();
    for (const socket of sockets) socket.destroy();
  });
  return {
    port: (server.address() as { port: number }).port,
    freeze: () => (frozen = true),
    thaw: () => {
      frozen = false;
      for (const deliver of waiting.splice(0)) deliver();
    },
  };
}

/** GETs the URL, bounded: a readiness that waits for a hung store would never answer. */
async function timedGet(url: string, headers: Record<string, string> = {}): Promise<{ response: Response; body: string; ms: number }> {
  const started = performance.now();
  return within(
    `GET ${url} is answered`,
    (async () => {
      const response = await fetch(url, { headers });
      const body = await response.text();
      return { response, body, ms: performance.now() - started };
    })(),
    5 * READY_TIMEOUT_MS,
  );
}

if (!(await postgresReachable())) {
  test('readiness when the store hangs', { skip: POSTGRES_SKIP_REASON }, () => undefined);
} else {
  test('postgres: when the store stops answering, /readyz answers 503 after its 1 s timeout while /healthz answers at once, and 200 again once the store answers', async (t) => {
    const database = new URL(await freshPostgresDatabase(t));
    const proxy = await freezingProxy(t, { host: database.hostname, port: Number(database.port || 5432) });
    const throughProxy = new URL(database);
    throughProxy.port = String(proxy.port);
    const server = await startServer(t, { DATABASE_URL: throughProxy.toString() });
    assert.equal((await timedGet(`${server.url}/readyz`)).response.status, 200);

    proxy.freeze();
    for (const requestId of ['hung-1', 'hung-2']) {
      const { response, body, ms } = await timedGet(`${server.url}/readyz`, { 'x-request-id': requestId });
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '1');
      assert.deepEqual(JSON.parse(body), {
        error: 503,
        message: `${errorCatalogue.STORE_UNAVAILABLE.message}: the store did not answer within ${READY_TIMEOUT_MS} ms`,
        code: 'STORE_UNAVAILABLE',
      });
      assert.ok(ms >= READY_TIMEOUT_MS - EARLY_MS && ms < READY_TIMEOUT_MS + LATE_MS, `${requestId}: answered after ${Math.round(ms)} ms`);
      await until(`the access line of ${requestId}`, () => server.logs.some((line) => line['reqId'] === requestId && line['msg'] === 'request'));
      const served = server.logs.find((line) => line['reqId'] === requestId && line['msg'] === 'request')!;
      const durationMs = served['durationMs'] as number;
      assert.ok(durationMs >= READY_TIMEOUT_MS - 1 && durationMs < READY_TIMEOUT_MS + LATE_MS, `${requestId}: the server took ${durationMs} ms`);
    }
    const health = await timedGet(`${server.url}/healthz`);
    assert.equal(health.response.status, 200);
    assert.ok(health.ms < LATE_MS, `liveness does not wait for the store: ${Math.round(health.ms)} ms`);

    proxy.thaw();
    await until('readiness is back', async () => (await timedGet(`${server.url}/readyz`)).response.status === 200);
    assert.equal(await server.stop(), 0);
  });
}
