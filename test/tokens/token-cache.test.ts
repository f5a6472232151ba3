import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { generateToken, hashToken } from '../../src/tokens/api-token.js';
import { storeWith } from '../helpers/store-with.js';
import { testApp } from '../helpers/test-app.js';
import { until } from '../helpers/until.js';

/** The real store, with every token lookup recorded (the hash looked up), each answered once `gate` opens. */
function countingLookups(store: Store, gate: Promise<void>): Store & { lookups: string[] } {
  const lookups: string[] = [];
  return storeWith(store, {
    lookups,
    async findTokenByHash(hash: string) {
      lookups.push(hash);
      await gate;
      return store.findTokenByHash(hash);
    },
  });
}

/**
 * The real app on a real port, its store counting lookups (answered once
 * `gate` opens, at once by default), its token cache going by `now`; `post`
 * creates over HTTP with the token given. `slowWay` lists the requests that
 * reached Fastify's route: a create whose token is not remembered goes there.
 */
async function servedWithCount(t: TestContext, tokenCacheTtlMs: number, now?: () => number, gate: Promise<void> = Promise.resolve()) {
  let counted: ReturnType<typeof countingLookups> | undefined;
  const served = await testApp(t, {
    tokenCacheTtlMs,
    authFailureLimit: 1000,
    ...(now === undefined ? {} : { now }),
    wrapStore: (store) => (counted = countingLookups(store, gate)),
  });
  const slowWay: string[] = [];
  served.app.addHook('onRequest', (request, _reply, done) => {
    slowWay.push(request.url);
    done();
  });
  const url = await served.app.listen({ host: '127.0.0.1', port: 0 });
  let id = 0;
  const post = async (token: string) =>
    (
      await fetch(`${url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: `{"id":${++id},"name":"p"}`,
      })
    ).status;
  return { ...served, lookups: counted!.lookups, post, slowWay };
}

test('TOKEN_CACHE_TTL_MS=0: every request looks its token up, so a revocation counts from the next request', async (t) => {
  const { post, token, store, lookups } = await servedWithCount(t, 0);
  for (let i = 0; i < 10; i++) assert.equal(await post(token), 200);
  assert.equal(lookups.length, 10, 'one lookup a request');
  assert.deepEqual(new Set(lookups), new Set([hashToken(token)]), 'by the hash, never the token');

  await store.revokeToken({ name: 'test' }, new Date());
  assert.equal(await post(token), 401, 'refused at once');
  assert.equal(lookups.length, 11);
});

test('the token cache saves lookups: a token, valid or unknown, is looked up once while it is remembered; an unknown one again once TOKEN_CACHE_TTL_MS has passed', async (t) => {
  const ttlMs = 500;
  let now = Date.now();
  const { post, token, lookups } = await servedWithCount(t, ttlMs, () => now);
  const unknown = generateToken();
  const lookupsOf = (presented: string) => lookups.filter((hash) => hash === hashToken(presented)).length;
  for (let i = 0; i < 20; i++) {
    assert.equal(await post(token), 200);
    assert.equal(await post(unknown), 401);
  }
  assert.deepEqual([lookupsOf(token), lookupsOf(unknown)], [1, 1], 'one lookup each for twenty requests each');

  now += ttlMs / 2 - 1;
  assert.equal(await post(token), 200);
  assert.equal(await post(unknown), 401);
  assert.deepEqual([lookupsOf(token), lookupsOf(unknown)], [1, 1], 'still remembered, and not looked up, 1 ms before half the TTL');

  now += ttlMs / 2;
  assert.equal(await post(unknown), 401);
  assert.equal(lookupsOf(unknown), 1, 'an unknown token is still remembered 1 ms before the TTL');
  now += 1;
  assert.equal(await post(unknown), 401);
  assert.equal(lookupsOf(unknown), 2, 'and looked up again once the TTL has passed');
});

test('a valid token in use is looked up again in the background from half its TTL on: its requests never wait for the store, and a revocation still counts within the TTL', async (t) => {
  const ttlMs = 400;
  let now = Date.now();
  const { app, post, token, lookups, slowWay, store } = await servedWithCount(t, ttlMs, () => now);
  assert.equal(await post(token), 200);
  assert.deepEqual(slowWay, ['/plants'], "the token's first use waits for its lookup");

  // Three TTLs of a busy client, the clock a quarter of the TTL further at each request.
  for (let step = 1; step <= 12; step++) {
    now += ttlMs / 4;
    assert.equal(await post(token), 200, `step ${step}`);
  }
  assert.deepEqual(slowWay, ['/plants'], 'no later request waited for a lookup: each was served from memory');
  assert.equal(lookups.length, 7, 'the first, then one each half TTL: not one a request');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  assert.match(metrics, /^plantstore_token_lookups_total\{outcome="found"\} 1$/m, 'the first use waited for its lookup');
  assert.match(metrics, /^plantstore_token_lookups_total\{outcome="refresh"\} 6$/m, 'the others were refreshes');

  await store.revokeToken({ name: 'test' }, new Date(now));
  const revokedAt = now;
  const statuses: number[] = [];
  while (now < revokedAt + ttlMs) {
    now += ttlMs / 8;
    statuses.push(await post(token));
  }
  assert.equal(statuses.at(-1), 401, `refused once the TTL has passed since the revocation: ${statuses.join(', ')}`);
});

test('concurrent first uses of one token wait for one lookup', async (t) => {
  const { promise: gate, resolve: open } = Promise.withResolvers<void>();
  const { post, token, lookups, slowWay } = await servedWithCount(t, 500, undefined, gate);
  const answers = Array.from({ length: 20 }, () => post(token));
  await until('all 20 requests have reached the route', () => slowWay.length === 20);
  open();
  assert.deepEqual(await Promise.all(answers), Array(20).fill(200));
  assert.equal(lookups.length, 1);
});
