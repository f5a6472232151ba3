import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { createRequest, splitAnswers } from '../helpers/http-answers.js';
import { rawConnection } from '../helpers/raw-http.js';
import { type TestApp, testApp } from '../helpers/test-app.js';

const BAD_REQUEST = '{"error":400,"message":"Bad request","code":"BAD_REQUEST"}';

/** The app on a real port: these are faults of HTTP framing, which only a real connection carries. */
async function listening(t: TestContext): Promise<Omit<TestApp, 'port'> & { port: number }> {
  const served = await testApp(t);
  return { ...served, port: await served.port() };
}

/** Sends the bytes on a new connection, optionally closes the sending side, and resolves the answers read until the server closes. */
async function exchange(port: number, bytes: string, { endAfterSending = false } = {}) {
  const connection = rawConnection(port);
  connection.socket.write(bytes);
  if (endAfterSending) connection.socket.end();
  await connection.closed;
  return splitAnswers(connection.received());
}

test('a body shorter than its Content-Length, its sender then done: 400 Bad request, and nothing stored', async (t) => {
  const { port, token, store } = await listening(t);
  const body = '{"id":1,"name":"short"}';
  const answers = await exchange(port, createRequest(token, body, { declaredLength: Buffer.byteLength(body) + 10 }), { endAfterSending: true });
  assert.deepEqual(answers.map(({ status, body }) => [status, body]), [[400, BAD_REQUEST]]);
  assert.equal(answers[0]!.headers['connection'], 'close');
  assert.equal(await store.countPlants(), 0n);
});

test('a Content-Length that cuts the JSON short: the request is the bytes it declares, answered 400 as not JSON, and nothing stored', async (t) => {
  const { port, token, store } = await listening(t);
  const body = '{"id":2,"name":"cut"}';
  const answers = await exchange(port, createRequest(token, body, { declaredLength: body.length - 6 }));
  assert.equal(answers[0]?.status, 400);
  assert.match(answers[0]!.body, /^\{"error":400,"message":"The request body is not valid JSON: /);
  assert.ok(answers.slice(1).every((answer) => answer.status === 400), 'at most a 400 for the bytes left over');
  assert.equal(await store.countPlants(), 0n);
});

test('bytes beyond a Content-Length no longer turn the answer of a stored create into a 400: the create is answered 200 first, then the leftover 400, in order', async (t) => {
  const { port, token, store } = await listening(t);
  // The Content-Length counts characters, not bytes: the request ends before the last bytes of the body.
  const stored = '{"id":3,"name":"Fern"}';
  const answers = await exchange(port, createRequest(token, `${stored}  \u00e9\u00e9`, { declaredLength: stored.length }));
  assert.deepEqual(
    answers.map(({ status, body }) => [status, body]),
    [
      [200, '{"name":"Fern"}'],
      [400, BAD_REQUEST],
    ],
  );
  assert.equal(answers[1]!.headers['connection'], 'close');
  assert.deepEqual(await store.listPlants({ limit: 10 }), [{ id: 3n, name: 'Fern' }]);

  // Two whole requests read in one go before the stray bytes: both answered, in order, before the 400.
  const more = await exchange(port, createRequest(token, '{"id":4,"name":"a"}') + createRequest(token, '{"id":5,"name":"b"}') + 'stray');
  assert.deepEqual(more.map(({ status, body }) => [status, body]), [[200, '{"name":"a"}'], [200, '{"name":"b"}'], [400, BAD_REQUEST]]);
  assert.equal(await store.countPlants(), 3n);
});
