import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { postPlant } from '../helpers/processes.js';
import { rawConnection } from '../helpers/raw-http.js';
import { until } from '../helpers/until.js';
import { plantBody, serverWithWebhook } from '../helpers/webhooks.js';

/** pino's level of `error`: what pages whoever watches the logs. */
const ERROR = 50;
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

/**
 * A rolling restart stops every instance gracefully: nothing in it is for
 * anyone to act on, so no line of it may be at error level or carry a stack.
 */
for (const backend of await testBackends('a graceful stop logs nothing at error level')) {
  test(`${backend.name}: a graceful stop under traffic (keep-alive connections, a create in flight, readiness polls, a webhook in flight) exits 0 and logs nothing at error level`, async (t) => {
    const hanging = '2';
    const { server, receiver, token } = await serverWithWebhook(t, backend, {
      settings: { SHUTDOWN_DELAY_MS: '600', LOG_LEVEL: 'debug' },
      answer: ({ plantId }) => (plantId === hanging ? 'hang' : 204),
    });
    const { hostname, port } = new URL(server.url);
    const open = () => rawConnection(Number(port), hostname, { ignoreErrors: true });

    assert.equal((await postPlant(server.url, token, plantBody(1n))).status, 200);
    assert.equal((await postPlant(server.url, token, plantBody(2n))).status, 200);
    await until('the webhook of plant 2 is in flight', () => receiver.received.some((request) => request.plantId === hanging));
    const idle = open();
    idle.socket.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
    await until('the keep-alive connection is answered', () => idle.received().endsWith('{"status":"ok"}'));
    const inFlight = open();
    const body = plantBody(3n, 'in flight during the stop');
    inFlight.socket.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n${body.slice(0, 5)}`,
    );
    await until('the create is in flight', () => inFlight.received().startsWith(CONTINUE));

    const stopped = server.stop('SIGTERM');
    await until('the stop begins', () => server.logs.some((line) => line['msg'] === 'stopping: not ready, serving for the shutdown delay'));
    // Readiness is polled, as a load balancer does, until the listener closes.
    const readiness: number[] = [];
    await until('the listener closes', async () => {
      try {
        readiness.push((await fetch(`${server.url}/readyz`)).status);
        return false;
      } catch {
        return true;
      }
    });
    assert.ok(readiness.length > 0 && readiness.every((status) => status === 503), `readiness while stopping: ${readiness.join(' ')}`);
    inFlight.socket.write(body.slice(5));
    await inFlight.closed;
    assert.match(inFlight.received().slice(CONTINUE.length), /^HTTP\/1\.1 200 OK\r\n/);
    assert.equal(await stopped, 0);

    const loud = server.logs.filter((line) => Number(line['level']) >= ERROR || JSON.stringify(line).includes('"stack"'));
    assert.deepEqual(loud, [], 'no line at error level or with a stack');
    const stopping = server.logs.filter((line) => line['code'] === 'STOPPING');
    assert.ok(stopping.length >= readiness.length, 'each readiness refusal is still logged, below error level');
    assert.ok(server.logs.some((line) => line['msg'] === 'stopped'), 'the stop ran to its end');
  });
}
