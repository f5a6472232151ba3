import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { generateToken, hashToken } from '../../src/tokens/api-token.js';
import { storeWith } from '../helpers/store-with.js';
import { testApp } from '../helpers/test-app.js';

/** The real store, with every token lookup recorded: the hash looked up. */
function countingLookups(store: Store): Store & { lookups: string[] } {
  const lookups: string[] = [];
  return storeWith(store, {
    lookups,
    findTokenByHash(hash: string) {
      lookups.push(hash);
      return store.findTokenByHash(hash);
    },
  });
}

/**
 * The real app on a real port, its store counting lookups, its token cache
 * going by `now`; `post` creates over HTTP with the token given.
 */
async function servedWithCount(t: TestContext, tokenCacheTtlMs: number, now?: () => number) {
  let counted: ReturnType<typeof countingLookups> | undefined;
  const served = await testApp(t, { tokenCacheTtlMs, authFailureLimit: 1000, ...(now === undefined ? {} : { now }), wrapStore: (store) => (counted = countingLookups(store)) });
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
  return { ...served, lookups: counted!.lookups, post };
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

test('the token cache saves lookups: a token, valid or unknown, is looked up once per TOKEN_CACHE_TTL_MS by the clock, and again once that has passed', async (t) => {
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

  now += ttlMs - 1;
  assert.equal(await post(token), 200);
  assert.equal(await post(unknown), 401);
  assert.deepEqual([lookupsOf(token), lookupsOf(unknown)], [1, 1], 'still remembered 1 ms before the TTL');

  now += 1;
  assert.equal(await post(token), 200);
  assert.equal(await post(unknown), 401);
  assert.deepEqual([lookupsOf(token), lookupsOf(unknown)], [2, 2], 'looked up again once the TTL has passed');
});
