import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { test, type TestContext } from 'node:test';
import { PlantStoreClient, PlantStoreError } from '../src/index.js';
import { retryAfterSeconds } from '../src/retry-after.js';

const NOW = Date.UTC(1994, 10, 6, 8, 49, 7); // Sun, 06 Nov 1994 08:49:07 GMT

test('Retry-After as delta-seconds: a non-negative integer', () => {
  assert.equal(retryAfterSeconds('120', NOW), 120);
  assert.equal(retryAfterSeconds('0', NOW), 0);
  assert.equal(retryAfterSeconds(' 7 ', NOW), 7, 'a field value without its optional whitespace');
});

test('Retry-After as an HTTP-date: seconds from now, rounded up, never negative', () => {
  assert.equal(retryAfterSeconds('Sun, 06 Nov 1994 08:49:37 GMT', NOW), 30);
  assert.equal(retryAfterSeconds('Sun, 06 Nov 1994 08:49:37 GMT', NOW + 500), 30, 'part of a second left is a whole one');
  assert.equal(retryAfterSeconds('Sun, 06 Nov 1994 08:49:37 GMT', NOW + 60_000), 0, 'a date past is now');
  // The two obsolete forms recipients must still accept.
  assert.equal(retryAfterSeconds('Sunday, 06-Nov-94 08:49:37 GMT', NOW), 30);
  assert.equal(retryAfterSeconds('Sun Nov  6 08:49:37 1994', NOW), 30);
});

test('anything else is no Retry-After: undefined', () => {
  for (const value of ['-1', '1.5', 'soon', '', '+5', '1e3', '0x10', 'Sun, 06 Nov 1994 08:49:37', 'Sun, 31 Feb 1994 08:49:37 GMT', 'Sun, 06 Nov 1994 24:00:00 GMT', null, undefined]) {
    assert.equal(retryAfterSeconds(value, NOW), undefined, JSON.stringify(value));
  }
});

/** A node:http server on 127.0.0.1 answering every request with `status`, `headers` and `body`; the requests it got are counted. */
async function answering(t: TestContext, status: number, headers: OutgoingHttpHeaders, body: string): Promise<{ url: string; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((request, response) => {
    requests.push(request);
    request.resume().on('end', () => response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, requests };
}

const RATE_LIMITED = JSON.stringify({ error: 429, message: 'Too many requests; retry after the time in Retry-After', code: 'RATE_LIMITED' });
const POLICY = { 'ratelimit-policy': '"default";q=600;w=60', ratelimit: '"default";r=0;t=60' };

test('429 RATE_LIMITED rejects at once with its retryAfter: the client leaves the retry to its caller', async (t) => {
  const server = await answering(t, 429, { 'retry-after': '42', ...POLICY }, RATE_LIMITED);
  const error = await new PlantStoreClient({ baseUrl: server.url, token: 'ps_x' }).createPlant({ id: 1, name: 'Fern' }).catch((thrown: unknown) => thrown);
  assert.ok(error instanceof PlantStoreError, String(error));
  assert.deepEqual([error.status, error.code, error.error, error.retryAfter], [429, 'RATE_LIMITED', 429, 42]);
  assert.equal(server.requests.length, 1, 'not retried');
});

test('429 with Retry-After as an HTTP-date, or not a valid one', async (t) => {
  const inAMinute = new Date(Date.now() + 60_000).toUTCString();
  for (const [header, expected] of [[inAMinute, [50, 60]], ['soon', undefined], [undefined, undefined]] as const) {
    const server = await answering(t, 429, header === undefined ? POLICY : { 'retry-after': header, ...POLICY }, RATE_LIMITED);
    const error = await new PlantStoreClient({ baseUrl: server.url, token: 'ps_x' }).createPlant({ id: 1, name: 'Fern' }).catch((thrown: unknown) => thrown);
    assert.ok(error instanceof PlantStoreError, String(error));
    if (expected === undefined) assert.equal(error.retryAfter, undefined, String(header));
    else assert.ok(error.retryAfter !== undefined && error.retryAfter >= expected[0] && error.retryAfter <= expected[1], `${header}: ${error.retryAfter}`);
  }
});
