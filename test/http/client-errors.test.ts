import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { rawExchange } from '../helpers/raw-http.js';
import { testApp } from '../helpers/test-app.js';

/** Sends raw bytes to the app on a real port and resolves everything it answers before closing. */
async function exchangeWithApp(t: TestContext, request: string): Promise<string> {
  const { app } = await testApp(t);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  return rawExchange(port, request);
}

test('a malformed HTTP request answers 400 with the Error body', async (t) => {
  const answer = await exchangeWithApp(t, 'NONSENSE\r\n\r\n');
  assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
  assert.match(answer, /\r\nContent-Type: application\/json; charset=utf-8\r\n/);
  assert.match(answer, /\r\nx-content-type-options: nosniff\r\n/);
  assert.ok(answer.endsWith('\r\n\r\n{"error":400,"message":"Bad request","code":"BAD_REQUEST"}'), answer);
});

test('headers over the limit answer 431 with the Error body', async (t) => {
  const answer = await exchangeWithApp(t, `POST /plants HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
  assert.match(answer, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  assert.ok(answer.endsWith('{"error":431,"message":"The request headers are too large","code":"HEADERS_TOO_LARGE"}'), answer);
});
