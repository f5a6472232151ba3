import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AuthFailureLimiter } from '../../src/http/auth-failure-limiter.js';
import { generateToken } from '../../src/tokens/api-token.js';
import { errorBody, testApp } from '../helpers/test-app.js';

test('an address that fails authentication too often gets 429, while valid tokens from it are served', async (t) => {
  const { app, post } = await testApp(t, { authFailureLimit: 3 });
  const stranger = generateToken();
  for (let i = 0; i < 2; i++) assert.equal((await post({ id: 1, name: 'x' }, { token: stranger })).statusCode, 401);
  assert.equal((await post({ id: 1, name: 'x' }, { token: null })).statusCode, 401, 'a missing token counts too');

  const limited = await post({ id: 1, name: 'x' }, { token: stranger });
  assert.equal(limited.statusCode, 429);
  const wait = Number(limited.headers['retry-after']);
  assert.ok(wait >= 1 && wait <= 60, `Retry-After: ${wait}`);
  assert.equal(errorBody(limited).message, 'Too many failed authentications from this address; retry after the time in Retry-After');
  assert.equal((await post({ id: 1, name: 'x' }, { token: null })).statusCode, 429);

  assert.equal((await post({ id: 2, name: 'valid' })).statusCode, 200, 'a valid token is never refused');

  const elsewhere = await app.inject({
    method: 'POST',
    url: '/plants',
    remoteAddress: '192.0.2.7',
    headers: { authorization: `Bearer ${stranger}`, 'content-type': 'application/json' },
    payload: '{"id":3,"name":"x"}',
  });
  assert.equal(elsewhere.statusCode, 401, 'another address has its own count');
});

test('the count starts again with a new window', () => {
  let now = 0;
  const limiter = new AuthFailureLimiter({ limit: 2, windowMs: 10_000, now: () => now });
  assert.equal(limiter.recordFailure('a'), undefined);
  assert.equal(limiter.recordFailure('a'), undefined);
  now = 4_000;
  assert.equal(limiter.recordFailure('a'), 6);
  assert.equal(limiter.recordFailure('b'), undefined);
  now = 10_000;
  assert.equal(limiter.recordFailure('a'), undefined);
});
