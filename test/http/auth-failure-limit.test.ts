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

test('behind a trusted proxy, the clients of one IPv6 /64 share one limit, and an IPv4 client is one with its IPv4-mapped form', async (t) => {
  const { post } = await testApp(t, { authFailureLimit: 3, trustProxy: ['loopback'] });
  const stranger = generateToken();
  const fail = (client: string) => post({ id: 1, name: 'x' }, { token: stranger, headers: { 'x-forwarded-for': client } }).then((answer) => answer.statusCode);

  // Three failures from three addresses of 2001:db8:1:2::/64 use up its limit...
  for (const client of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff:ffff:ffff:ffff']) assert.equal(await fail(client), 401, client);
  assert.equal(await fail('2001:db8:1:2::1'), 429);
  assert.equal(await fail('2001:db8:1:2:a:b:c:d'), 429, 'a fresh address within the /64 is refused too');
  // ...and not another /64's.
  assert.equal(await fail('2001:db8:1:3::1'), 401);

  for (let i = 0; i < 3; i++) assert.equal(await fail(i % 2 === 0 ? '203.0.113.7' : '::ffff:203.0.113.7'), 401);
  assert.equal(await fail('::ffff:203.0.113.7'), 429);
  assert.equal(await fail('203.0.113.7'), 429);
  assert.equal(await fail('203.0.113.8'), 401, 'IPv4 addresses are not grouped');
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
