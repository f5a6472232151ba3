import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MOST_CLIENTS, RateLimiter } from '../../src/rate-limits/rate-limiter.js';
import { parseRatePolicy } from '../../src/rate-limits/rate-policy.js';
import { openStore } from '../../src/store/open-store.js';
import { parseDatabaseUrl } from '../../src/config/config.js';
import { sqlite } from '../helpers/backends.js';

test('100,000 distinct clients keep the limiter to MOST_CLIENTS remembered, and the store prunes their full buckets', async (t) => {
  const store = await openStore({ database: parseDatabaseUrl(await sqlite.freshUrl(t), 'test'), databasePoolSize: 1 });
  t.after(() => store.close());
  const errors: unknown[] = [];
  const limiter = new RateLimiter(store.rateLimits, { onError: (error) => errors.push(error) });
  t.after(() => limiter.stop());
  // A second's window: each bucket is full again 100 ms after its one create.
  const policy = parseRatePolicy('10/1s', 'default')!;
  let most = 0;
  for (let i = 0; i < 100_000; i++) {
    const decision = await limiter.take(`jwt:https://idp.test sub-${i}`, policy);
    assert.ok(decision.allowed);
    most = Math.max(most, limiter.size);
  }
  assert.equal(most, MOST_CLIENTS, 'past MOST_CLIENTS the longest remembered is forgotten');
  await limiter.stop();
  assert.equal(limiter.size, 0);
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(await store.rateLimits.prune(), 100_000, 'every bucket is full again, and its row deleted');
  assert.equal(await store.rateLimits.prune(), 0);
  assert.deepEqual(errors, []);
});

test('a client idle for IDLE_MS is forgotten by the sweep, its slice given back', async (t) => {
  const store = await openStore({ database: parseDatabaseUrl(await sqlite.freshUrl(t), 'test'), databasePoolSize: 1 });
  t.after(() => store.close());
  let now = 1_000_000;
  const limiter = new RateLimiter(store.rateLimits, { now: () => now, onError: (error) => assert.fail(String(error)) });
  t.after(() => limiter.stop());
  const policy = parseRatePolicy('100/1h', 'default')!;
  assert.ok((await limiter.take('token:a', policy)).allowed);
  assert.equal(limiter.size, 1);
  limiter.start();
  now += 11_000;
  // The sweep runs every 250 ms: bounded wait for it.
  const deadline = Date.now() + 5000;
  while (limiter.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(limiter.size, 0);
});
