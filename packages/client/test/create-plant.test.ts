import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { generateToken } from '../../../src/tokens/api-token.js';
import { ServiceError } from '../../../src/errors.js';
import type { Store } from '../../../src/store/store.js';
import { storeWith } from '../../../test/helpers/store-with.js';
import { gatedStore } from '../../../test/helpers/gated-store.js';
import { claims, jwtApp, makeKey, signToken, startKeySetServer } from '../../../test/helpers/key-set-server.js';
import { TcpProxy } from '../../../test/helpers/tcp-proxy.js';
import { testApp } from '../../../test/helpers/test-app.js';
import { until } from '../../../test/helpers/until.js';
import { type FetchLike, PlantStoreClient, PlantStoreError } from '../src/index.js';

/** The real service on a fresh store, listening on a port of its own. */
async function server(t: TestContext, config: Parameters<typeof testApp>[1] = {}) {
  const served = await testApp(t, config);
  const url = await served.app.listen({ host: '127.0.0.1', port: 0 });
  const plants = async () => (await served.store.listPlants({ limit: 100 })).map((plant) => ({ ...plant, id: String(plant.id) }));
  return { ...served, url, plants };
}

/** The global fetch, with every answer's status (or the network error) recorded and `after` run on it. */
function recordingFetch(after: (outcome: number | 'network error') => Promise<void> | void = () => undefined): { fetch: FetchLike; outcomes: (number | 'network error')[] } {
  const outcomes: (number | 'network error')[] = [];
  return {
    outcomes,
    fetch: async (url, init) => {
      try {
        const response = await fetch(url, init);
        outcomes.push(response.status);
        await after(response.status);
        return response;
      } catch (error) {
        outcomes.push('network error');
        await after('network error');
        throw error;
      }
    },
  };
}

const fast = { retries: 3, baseDelayMs: 1, maxDelayMs: 2000 };

test('200: the plant, its id beyond 2^53 stored with every digit, as a bigint, a string or a safe number', async (t) => {
  const { url, token, plants } = await server(t);
  const client = new PlantStoreClient({ baseUrl: url, token });
  assert.deepEqual(await client.createPlant({ id: 9007199254740993n, name: 'Monstera', tag: 'aroid' }), { name: 'Monstera', tag: 'aroid' });
  assert.deepEqual(await client.createPlant({ id: '-9223372036854775808', name: 'Fern' }), { name: 'Fern' });
  assert.deepEqual(await client.createPlant({ id: 7, name: 'Cactus', tag: '' }), { name: 'Cactus', tag: '' });
  assert.deepEqual(await client.createPlant({ id: '9007199254740993', name: 'Monstera', tag: 'aroid' }), { name: 'Monstera', tag: 'aroid' }, 'the same plant again');
  assert.deepEqual(
    (await plants()).sort((a, b) => a.id.localeCompare(b.id)),
    [
      { id: '-9223372036854775808', name: 'Fern' },
      { id: '7', name: 'Cactus', tag: '' },
      { id: '9007199254740993', name: 'Monstera', tag: 'aroid' },
    ],
  );
});

test('an id that is not a signed 64-bit integer, or a number beyond 2^53, throws a RangeError before anything is sent', async (t) => {
  const { url, token } = await server(t);
  const { fetch, outcomes } = recordingFetch();
  const client = new PlantStoreClient({ baseUrl: url, token, fetch });
  for (const id of [2 ** 53, 9007199254740993, 1.5, Number.NaN, '9223372036854775808', '1e3', ' 7', '0x10', '', 2n ** 63n, -(2n ** 63n) - 1n]) {
    await assert.rejects(client.createPlant({ id, name: 'x' }), RangeError, String(id));
  }
  assert.deepEqual(outcomes, []);
});

test('every error answer of the service rejects with a PlantStoreError carrying its status, code, error and message, and is not retried', async (t) => {
  const { url, token } = await server(t, { bodyLimit: 1024, authFailureLimit: 2 });
  const { fetch, outcomes } = recordingFetch();
  const client = (options: { token?: string; rewrite?: (init: Parameters<FetchLike>[1]) => Parameters<FetchLike>[1] } = {}) =>
    new PlantStoreClient({
      baseUrl: url,
      token: options.token ?? token,
      retry: fast,
      fetch: (target, init) => fetch(target, options.rewrite?.(init) ?? init),
    });
  await client().createPlant({ id: 1, name: 'Fern' });
  const refusals: [number, string, string, Promise<unknown>][] = [
    [400, 'INVALID_PLANT', 'Invalid plant: name must be valid Unicode', client().createPlant({ id: 2, name: '\ud800' })],
    [409, 'PLANT_CONFLICT', 'A plant with this id already exists with a different name or tag: ', client().createPlant({ id: 1, name: 'Rose' })],
    [413, 'BODY_TOO_LARGE', 'The request body is too large', client().createPlant({ id: 3, name: 'x'.repeat(2000) })],
    [431, 'HEADERS_TOO_LARGE', 'The request headers are too large', client({ token: 'x'.repeat(20_000) }).createPlant({ id: 4, name: 'x' })],
    // A proxy between client and service that changes the method or the media type:
    [405, 'METHOD_NOT_ALLOWED', 'Method not allowed: PUT /plants; this path accepts POST', client({ rewrite: (init) => ({ ...init, method: 'PUT' }) }).createPlant({ id: 5, name: 'x' })],
    [415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported media type', client({ rewrite: (init) => ({ ...init, headers: { ...init.headers, 'content-type': 'text/plain' } }) }).createPlant({ id: 6, name: 'x' })],
    // Two failed authentications, then the address is refused.
    [401, 'INVALID_TOKEN', 'The bearer token is unknown, revoked or expired', client({ token: generateToken() }).createPlant({ id: 7, name: 'x' })],
    [401, 'MISSING_CREDENTIALS', 'Authentication required', client({ rewrite: (init) => ({ ...init, headers: { ...init.headers, authorization: 'Basic eDp4' } }) }).createPlant({ id: 8, name: 'x' })],
    [429, 'TOO_MANY_AUTH_FAILURES', 'Too many failed authentications from this address', client({ token: generateToken() }).createPlant({ id: 9, name: 'x' })],
  ];
  for (const [status, code, message, call] of refusals) {
    const error = await call.then(
      () => assert.fail(`${status} expected`),
      (thrown: unknown) => thrown,
    );
    assert.ok(error instanceof PlantStoreError, `${status}: ${String(error)}`);
    assert.equal(error.status, status);
    assert.equal(error.code, code);
    assert.equal(error.error, status);
    assert.ok(error.message.startsWith(message), `${status}: ${error.message}`);
  }
  const limited = await client({ token: generateToken() }).createPlant({ id: 10, name: 'x' }).catch((error: PlantStoreError) => error);
  assert.ok(limited instanceof PlantStoreError, String(limited));
  // The limiter's window is 60 s: the address may try again within it.
  assert.ok(Number.isInteger(limited.retryAfter) && limited.retryAfter! >= 1 && limited.retryAfter! <= 60, `a 429 carries its Retry-After: ${limited.retryAfter}`);
  assert.deepEqual(outcomes, [200, 400, 409, 413, 431, 405, 415, 401, 401, 429, 429], 'one attempt each: no 4xx is retried');
});

test('408: a body that stops halfway (a stalled network) is answered 408 once the request time is over, and not retried', async (t) => {
  const { url, token, plants } = await server(t, { requestTimeoutMs: 1000, headersTimeoutMs: 1000 });
  const { fetch, outcomes } = recordingFetch();
  // The first half of the body, and then nothing.
  const stalling: FetchLike = (target, init) => {
    const half = new TextEncoder().encode(init.body.slice(0, init.body.length / 2));
    const body = new ReadableStream({ start: (controller) => controller.enqueue(half) });
    return fetch(target, { ...init, body, duplex: 'half' } as unknown as Parameters<FetchLike>[1]);
  };
  const error = await new PlantStoreClient({ baseUrl: url, token, fetch: stalling, retry: fast }).createPlant({ id: 1, name: 'slow' }).catch((thrown: unknown) => thrown);
  assert.ok(error instanceof PlantStoreError);
  assert.deepEqual([error.status, error.code, error.error, error.message], [408, 'REQUEST_TIMEOUT', 408, 'The request was not received in time']);
  assert.deepEqual(outcomes, [408]);
  assert.deepEqual(await plants(), []);
});

test("403: a JWT of the server's identity provider without the scope; rejected at once, not retried", async (t) => {
  const provider = await startKeySetServer(t);
  const key = await makeKey('ES256');
  provider.publish(key);
  const { url } = await jwtApp(t, provider);
  const token = await signToken(key, claims(provider, { scope: 'openid profile' }));
  const { fetch, outcomes } = recordingFetch();
  const error = await new PlantStoreClient({ baseUrl: url, token, fetch, retry: fast }).createPlant({ id: 1, name: 'x' }).catch((thrown: unknown) => thrown);
  assert.ok(error instanceof PlantStoreError);
  assert.deepEqual([error.status, error.code, error.error], [403, 'INSUFFICIENT_SCOPE', 403]);
  assert.ok(error.message.startsWith('The bearer token is valid but does not grant the scope this request needs'), error.message);
  assert.deepEqual(outcomes, [403]);
});

test("503 from an identity provider that is down: retried after its Retry-After, and created once the provider is back", async (t) => {
  const provider = await startKeySetServer(t);
  const key = await makeKey('ES256');
  provider.publish(key);
  provider.down = true;
  const served = await jwtApp(t, provider, { jwtJwksCooldownMs: 1000 });
  const token = await signToken(key, claims(provider));
  const { fetch, outcomes } = recordingFetch((outcome) => {
    if (outcome === 503) provider.down = false;
  });
  const plant = await new PlantStoreClient({ baseUrl: served.url, token, fetch, retry: fast }).createPlant({ id: 9007199254740993n, name: 'Monstera' });
  assert.deepEqual(plant, { name: 'Monstera' });
  assert.deepEqual(outcomes, [503, 200]);
  assert.deepEqual(await served.store.listPlants({ limit: 10 }), [{ id: 9007199254740993n, name: 'Monstera' }]);
});

test('500: the server failed; rejected at once, not retried', async (t) => {
  const failing = (store: Store): Store => Object.assign(Object.create(store) as Store, { createPlants: () => Promise.reject(new Error('a bug')) });
  const { url, token } = await server(t, { wrapStore: failing });
  const { fetch, outcomes } = recordingFetch();
  const error = await new PlantStoreClient({ baseUrl: url, token, fetch, retry: fast })
    .createPlant({ id: 1, name: 'x' })
    .catch((thrown: unknown) => thrown);
  assert.ok(error instanceof PlantStoreError);
  assert.deepEqual([error.status, error.code, error.message], [500, 'INTERNAL', 'Internal server error; the server log has the detail under this request id']);
  assert.deepEqual(outcomes, [500]);
});

/**
 * Fills the service's write queue (WRITE_QUEUE_MAX=1): one create held in
 * its commit, one waiting; the next is answered 503 with Retry-After: 1.
 */
async function fullQueue(served: Awaited<ReturnType<typeof server>>, gate: ReturnType<typeof gatedStore>): Promise<{ release(): Promise<void> }> {
  gate.hold();
  const batches = gate.batches.length;
  const inFlight = served.post({ id: 1001, name: 'in flight' });
  await until('the first create is in its commit', () => gate.batches.length === batches + 1);
  const queued = served.post({ id: 1002, name: 'queued' });
  await until('the second create waits in the queue', () => served.app.groupCommit.waiting === 1);
  return {
    release: async () => {
      gate.release();
      assert.deepEqual([(await inFlight).statusCode, (await queued).statusCode], [200, 200]);
    },
  };
}

test("503: retried with the same body after the answer's Retry-After, then the plant is created", async (t) => {
  let gate: ReturnType<typeof gatedStore> | undefined;
  const served = await server(t, { writeQueueMax: 1, wrapStore: (store) => (gate = gatedStore(store)) });
  const queue = await fullQueue(served, gate!);
  const { fetch, outcomes } = recordingFetch((outcome) => (outcome === 503 ? queue.release() : undefined));
  const started = performance.now();
  const plant = await new PlantStoreClient({ baseUrl: served.url, token: served.token, fetch, retry: fast }).createPlant({ id: 2n, name: 'second' });
  assert.deepEqual(plant, { name: 'second' });
  assert.deepEqual(outcomes, [503, 200]);
  assert.ok(performance.now() - started >= 1000, 'waited for Retry-After: 1');
  assert.deepEqual((await served.plants()).map((stored) => stored.id).sort(), ['1001', '1002', '2']);
});

test('503 with a Retry-After beyond the longest wait, or after the last retry: rejected with its retryAfter', async (t) => {
  let gate: ReturnType<typeof gatedStore> | undefined;
  const served = await server(t, { writeQueueMax: 1, wrapStore: (store) => (gate = gatedStore(store)) });
  const queue = await fullQueue(served, gate!);
  const { fetch, outcomes } = recordingFetch();
  for (const retry of [{ ...fast, maxDelayMs: 500 }, false as const]) {
    const error = await new PlantStoreClient({ baseUrl: served.url, token: served.token, fetch, retry }).createPlant({ id: 2, name: 'x' }).catch((thrown: unknown) => thrown);
    assert.ok(error instanceof PlantStoreError);
    assert.deepEqual([error.status, error.code, error.retryAfter], [503, 'OVERLOADED', 1]);
    assert.equal(error.message, 'The server has more writes waiting than it accepts; retry later: 1 plants are waiting to be written');
  }
  assert.deepEqual(outcomes, [503, 503]);
  await queue.release();
});

test('two 503s are told apart by their code: the store is away (STORE_UNAVAILABLE), or writes are queued past the limit (OVERLOADED)', async (t) => {
  const away = (store: Store): Store => storeWith(store, { createPlants: () => Promise.reject(new ServiceError('STORE_UNAVAILABLE')) });
  const storeAway = await server(t, { wrapStore: away });
  const unavailable = await new PlantStoreClient({ baseUrl: storeAway.url, token: storeAway.token, retry: false }).createPlant({ id: 1, name: 'x' }).catch((thrown: unknown) => thrown);
  let gate: ReturnType<typeof gatedStore> | undefined;
  const busy = await server(t, { writeQueueMax: 1, wrapStore: (store) => (gate = gatedStore(store)) });
  const queue = await fullQueue(busy, gate!);
  const overloaded = await new PlantStoreClient({ baseUrl: busy.url, token: busy.token, retry: false }).createPlant({ id: 2, name: 'x' }).catch((thrown: unknown) => thrown);
  await queue.release();
  assert.ok(unavailable instanceof PlantStoreError && overloaded instanceof PlantStoreError);
  assert.deepEqual([unavailable.status, unavailable.code, overloaded.status, overloaded.code], [503, 'STORE_UNAVAILABLE', 503, 'OVERLOADED']);
});

test('network errors are retried with the same body: a refused connection, then a timeout whose plant was stored', async (t) => {
  let gate: ReturnType<typeof gatedStore> | undefined;
  const { app, url, token, plants } = await server(t, { wrapStore: (store) => (gate = gatedStore(store)) });
  const proxy = await TcpProxy.start(t, { host: '127.0.0.1', port: new URL(url).port === '' ? 80 : Number(new URL(url).port) });
  const viaProxy = `http://127.0.0.1:${proxy.port}`;

  // The service is unreachable for the first attempt, and back for the retry.
  await proxy.cut();
  const refused = recordingFetch((outcome) => (outcome === 'network error' ? proxy.restore() : undefined));
  assert.deepEqual(await new PlantStoreClient({ baseUrl: viaProxy, token, fetch: refused.fetch, retry: fast }).createPlant({ id: 1, name: 'Fern' }), { name: 'Fern' });
  assert.deepEqual(refused.outcomes, ['network error', 200]);

  // The first attempt's commit is held past the client's timeout; the retry finds the plant stored and is answered 200.
  gate!.hold();
  const timedOut = recordingFetch((outcome) => (outcome === 'network error' ? gate!.release() : undefined));
  const client = new PlantStoreClient({ baseUrl: url, token, fetch: timedOut.fetch, timeoutMs: 300, retry: fast });
  assert.deepEqual(await client.createPlant({ id: 2, name: 'Rose', tag: 'red' }), { name: 'Rose', tag: 'red' });
  assert.deepEqual(timedOut.outcomes, ['network error', 200]);
  assert.deepEqual((await plants()).map((plant) => plant.id).sort(), ['1', '2']);

  // Retries are bounded: a service that stays away rejects with a NETWORK_ERROR after the last one, fetch's error as its cause.
  await app.close();
  const away = recordingFetch();
  const error = await new PlantStoreClient({ baseUrl: url, token, fetch: away.fetch, retry: fast }).createPlant({ id: 3, name: 'x' }).catch((thrown: unknown) => thrown);
  assert.ok(error instanceof PlantStoreError, String(error));
  assert.deepEqual([error.code, error.status, error.error], ['NETWORK_ERROR', undefined, undefined]);
  assert.ok(error.cause instanceof TypeError, String(error.cause));
  assert.deepEqual(away.outcomes, ['network error', 'network error', 'network error', 'network error']);
});

test('an AbortSignal cancels the call: while the answer is awaited, and while a retry waits', async (t) => {
  let gate: ReturnType<typeof gatedStore> | undefined;
  const served = await server(t, { writeQueueMax: 1, wrapStore: (store) => (gate = gatedStore(store)) });
  const client = (fetch?: FetchLike) => new PlantStoreClient({ baseUrl: served.url, token: served.token, ...(fetch ? { fetch } : {}) });

  gate!.hold();
  const inFlight = new AbortController();
  const call = client().createPlant({ id: 1, name: 'held' }, { signal: inFlight.signal });
  await until('the create is in its commit', () => gate!.batches.length === 1);
  inFlight.abort(new Error('changed my mind'));
  await assert.rejects(call, { message: 'changed my mind' });
  gate!.release();

  // The 503 says to retry after 1 s; the abort comes during that wait.
  const queue = await fullQueue(served, gate!);
  const waiting = new AbortController();
  const { fetch, outcomes } = recordingFetch((outcome) => (outcome === 503 ? waiting.abort() : undefined));
  await assert.rejects(client(fetch).createPlant({ id: 2, name: 'x' }, { signal: waiting.signal }), { name: 'AbortError' });
  assert.deepEqual(outcomes, [503]);
  await queue.release();

  const before = new AbortController();
  before.abort();
  const none = recordingFetch();
  await assert.rejects(client(none.fetch).createPlant({ id: 3, name: 'x' }, { signal: before.signal }), { name: 'AbortError' });
  assert.deepEqual(none.outcomes, [], 'nothing sent');
});
