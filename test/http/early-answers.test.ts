import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { type TestContext, test } from 'node:test';
import { LINGER_MS } from '../../src/http/server/answer-before-body.js';
import { generateToken } from '../../src/tokens/api-token.js';
import { type Answer, createRequest, splitAnswers } from '../helpers/http-answers.js';
import { claims, jwtApp, makeKey, signToken, startKeySetServer } from '../helpers/key-set-server.js';
import { rawConnection } from '../helpers/raw-http.js';
import { testApp } from '../helpers/test-app.js';
import { until, within } from '../helpers/until.js';

/**
 * A request whose headers earn an answer before its body has arrived gets
 * that one answer, and the connection closes after it: the body that never
 * comes cannot earn a 408 as a second answer to the same request.
 *
 * POST /plants has two routes. The node:http fast path takes only the
 * creates whose headers leave nothing to refuse, and answers after the
 * whole body; every refusal of headers is Fastify's, whether the request
 * came to the fast path's door (`/plants`, the token it remembers) or could
 * never be the fast path's (`/plants?via=fastify`: it declines any query).
 */

const REQUEST_TIMEOUT_MS = 1000;
const BODY = '{"id":1,"name":"Fern"}';
const ROUTES = ['/plants', '/plants?via=fastify'] as const;

/** The app on a real port, its token already remembered, so that the fast path would take a create that carries it. */
async function served(t: TestContext, config: Parameters<typeof testApp>[1] = {}) {
  const app = await testApp(t, { requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: REQUEST_TIMEOUT_MS, ...config });
  assert.equal((await app.post({ id: 100, name: 'remembers the token' })).statusCode, 200);
  return { ...app, port: await app.port() };
}

/** A POST to `path` with these headers, a Content-Length of `declared` bytes and only `body` of them. */
function post(path: string, headers: Record<string, string | undefined>, body: string, declared = 100): string {
  const lines = Object.entries({ host: 'x', 'content-length': String(declared), ...headers })
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return `POST ${path} HTTP/1.1\r\n${lines}\r\n${body}`;
}

/** Sends the bytes and reads until the server closes the connection (bounded); resolves the answers. */
async function answersUntilClosed(port: number, bytes: string): Promise<Answer[]> {
  const connection = rawConnection(port);
  connection.socket.write(bytes);
  await connection.closed;
  return splitAnswers(connection.received());
}

function assertOneAnswer(answers: Answer[], status: number, code: string, what: string): void {
  assert.deepEqual(
    answers.map((answer) => [answer.status, (JSON.parse(answer.body) as { code: string }).code]),
    [[status, code]],
    `${what}: exactly one answer`,
  );
  assert.equal(answers[0]!.headers['connection'], 'close', `${what}: says the connection closes`);
}

test('a refusal before the body is the only answer, with Connection: close, then the connection closes: 401, 413, 415, 429, on both routes', async (t) => {
  const { port, token } = await served(t, { bodyLimit: 1024, authFailureLimit: 4 });
  const json = { 'content-type': 'application/json' };
  for (const path of ROUTES) {
    const refusals: [number, string, Record<string, string | undefined>, number?][] = [
      [401, 'MISSING_CREDENTIALS', json],
      [401, 'INVALID_TOKEN', { ...json, authorization: `Bearer ${generateToken()}` }],
      [415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': 'text/plain', authorization: `Bearer ${token}` }],
      [413, 'BODY_TOO_LARGE', { ...json, authorization: `Bearer ${token}` }, 4096],
    ];
    for (const [status, code, headers, declared] of refusals) {
      assertOneAnswer(await answersUntilClosed(port, post(path, headers, BODY.slice(0, 5), declared)), status, code, `${status} at ${path}`);
    }
  }
  // Four failed authentications so far from this address: the next is refused for that.
  const limited = await answersUntilClosed(port, post('/plants', { ...json, authorization: `Bearer ${generateToken()}` }, BODY.slice(0, 5)));
  assertOneAnswer(limited, 429, 'TOO_MANY_AUTH_FAILURES', '429');
});

test('403: a valid JWT without the scope, its body not yet sent, gets its one answer and the connection closes', async (t) => {
  const provider = await startKeySetServer(t);
  const key = await makeKey('ES256');
  provider.publish(key);
  const { url } = await jwtApp(t, provider);
  const token = await signToken(key, claims(provider, { scope: 'openid' }));
  for (const path of ROUTES) {
    const answers = await answersUntilClosed(Number(new URL(url).port), post(path, { 'content-type': 'application/json', authorization: `Bearer ${token}` }, ''));
    assertOneAnswer(answers, 403, 'INSUFFICIENT_SCOPE', `403 at ${path}`);
  }
});

test('the fast path answers only after the whole body: a body that stops halfway gets the one 408, and nothing is stored', async (t) => {
  const { port, token, store } = await served(t);
  const answers = await answersUntilClosed(port, createRequest(token, BODY.slice(0, 5), { declaredLength: BODY.length }));
  assertOneAnswer(answers, 408, 'REQUEST_TIMEOUT', 'the fast path');
  assert.equal(await store.countPlants(), 1n, 'only the plant that remembered the token');
});

test('a refusal whose body had arrived whole keeps the connection: the next request on it is served, on both routes', async (t) => {
  const { port, token, store } = await served(t);
  for (const [i, path] of ROUTES.entries()) {
    const connection = rawConnection(port);
    connection.socket.write(createRequest(generateToken(), BODY).replace('/plants', path));
    await until(`the refusal at ${path}`, () => splitAnswers(connection.received()).length === 1);
    const [refused] = splitAnswers(connection.received());
    assert.deepEqual([refused!.status, refused!.headers['connection']], [401, 'keep-alive'], path);
    connection.socket.write(createRequest(token, `{"id":${i + 1},"name":"next"}`, { headers: { connection: 'close' } }).replace('/plants', path));
    await connection.closed;
    assert.deepEqual(splitAnswers(connection.received()).map((answer) => answer.status), [401, 200], path);
  }
  assert.equal(await store.countPlants(), 3n);
});

/**
 * A connection whose client keeps its own side open when the server closes
 * its side, as a client still sending its body does; a socket error (a
 * reset) is recorded, not thrown.
 */
function halfOpenConnection(t: TestContext, port: number) {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  t.after(() => socket.destroy());
  let received = '';
  const errors: string[] = [];
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', (error: NodeJS.ErrnoException) => errors.push(String(error.code)));
  const serverEnded = new Promise<void>((resolve) => socket.once('end', () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, errors, received: () => received, serverEnded, closed };
}

test('after an early answer the connection reads on and closes without a reset: a body still being sent is taken, and a request after it is not served', async (t) => {
  const { port, token, store } = await served(t);
  const body = `{"id":7,"name":"${'x'.repeat(60_000)}"}`;
  const connection = halfOpenConnection(t, port);
  connection.socket.write(post('/plants', { 'content-type': 'application/json', authorization: `Bearer ${generateToken()}` }, body.slice(0, 1000), body.length));
  await within('the server ends its side after the early answer', connection.serverEnded, 5000);
  assertOneAnswer(splitAnswers(connection.received()), 401, 'INVALID_TOKEN', 'the refused request');
  // The client goes on sending, as a client whose body was in flight does; a connection closed at once would reset.
  for (let at = 1000; at < body.length; at += 8192) {
    connection.socket.write(body.slice(at, at + 8192));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  connection.socket.end(createRequest(token, '{"id":8,"name":"sent after the refusal"}'));
  await within('the connection closes', connection.closed, 5000);
  assert.deepEqual(connection.errors, [], 'no reset');
  assert.equal(splitAnswers(connection.received()).length, 1, 'nothing more was answered');
  assert.equal(await store.countPlants(), 1n, 'the create sent on the closing connection was not served');
});

test('a client that keeps its side open after an early answer is closed within the linger time', async (t) => {
  const { app, port } = await served(t, { requestTimeoutMs: 60_000 });
  const open = () => new Promise<number>((resolve, reject) => app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
  // The keep-alive connection of the create that remembered the token stays open throughout.
  const before = await open();
  const connection = halfOpenConnection(t, port);
  connection.socket.write(post('/plants', { 'content-type': 'application/json', authorization: `Bearer ${generateToken()}` }, BODY.slice(0, 5)));
  await within('the server ends its side after the early answer', connection.serverEnded, 5000);
  const ended = performance.now();
  assertOneAnswer(splitAnswers(connection.received()), 401, 'INVALID_TOKEN', 'the refused request');
  await until('the server closes the connection', async () => (await open()) === before, LINGER_MS + 5000);
  const took = performance.now() - ended;
  assert.ok(took >= LINGER_MS - 100, `closed ${Math.round(took)} ms after the answer: it lingered`);
});
