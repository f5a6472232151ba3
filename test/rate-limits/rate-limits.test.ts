import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServiceError } from '../../src/errors.js';
import { issueToken } from '../../src/tokens/issue-token.js';
import { claims, jwtApp, makeKey, signToken, startKeySetServer } from '../helpers/key-set-server.js';
import { storeWith } from '../helpers/store-with.js';
import { type HttpAnswer, testApp } from '../helpers/test-app.js';

let nextId = 1;
const plant = () => ({ id: nextId++, name: 'Fern' });

function assertFields(answer: HttpAnswer, policy: string): void {
  assert.equal(answer.headers['ratelimit-policy'], policy, `${answer.statusCode}: RateLimit-Policy`);
  assert.match(String(answer.headers['ratelimit']), /^"(default|token)";r=\d+;t=\d+$/, `${answer.statusCode}: RateLimit`);
}

test('a burst over the quota: exactly the quota answered 200, the rest 429 RATE_LIMITED, the fields on every answer', async (t) => {
  const app = await testApp(t, { rateLimit: '10/1h' });
  const answers = await Promise.all(Array.from({ length: 25 }, () => app.post(plant())));
  const ok = answers.filter((answer) => answer.statusCode === 200);
  const refused = answers.filter((answer) => answer.statusCode === 429);
  // An hour's window refills 10 creates an hour: none within the burst.
  assert.equal(ok.length, 10);
  assert.equal(refused.length, 15);
  for (const answer of answers) assertFields(answer, '"default";q=10;w=3600');
  for (const answer of refused) {
    assert.deepEqual(Object.keys(answer.json() as object), ['error', 'message', 'code']);
    assert.equal((answer.json() as { code: string }).code, 'RATE_LIMITED');
    const retryAfter = Number(answer.headers['retry-after']);
    // One create refills in 360 s.
    assert.ok(retryAfter > 0 && retryAfter <= 360, `Retry-After ${answer.headers['retry-after']}`);
    assert.match((answer.json() as { message: string }).message, new RegExp(`retry in ${retryAfter} s$`));
    assert.match(String(answer.headers['ratelimit']), /^"default";r=0;t=\d+$/);
  }
  const remaining = ok.map((answer) => Number(/r=(\d+)/.exec(String(answer.headers['ratelimit']))![1])).sort((a, b) => a - b);
  assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'each 200 says what is left after it');

  const metrics = await app.request({ method: 'GET', url: '/metrics' });
  assert.match(metrics.body, /^plantstore_rate_limited_total\{policy="default"\} 15$/m);
});

test('answers refused before the create take nothing from the quota and still carry the fields', async (t) => {
  const app = await testApp(t, { rateLimit: '2/1h' });
  for (let i = 0; i < 5; i++) {
    const invalid = await app.post({ id: 'seven', name: 'Fern' });
    assert.equal(invalid.statusCode, 400);
    assertFields(invalid, '"default";q=2;w=3600');
  }
  const wrongType = await app.post(plant(), { contentType: 'text/plain' });
  assert.equal(wrongType.statusCode, 415);
  assertFields(wrongType, '"default";q=2;w=3600');
  assert.equal((await app.post(plant())).statusCode, 200);
  assert.equal((await app.post(plant())).statusCode, 200);
  assert.equal((await app.post(plant())).statusCode, 429);
});

test('a token without its own policy is under RATE_LIMIT; one with its own keeps it; with neither there is no limit and no field', async (t) => {
  const app = await testApp(t, { rateLimit: '3/1h' });
  const own = await issueToken(app.store, { name: 'own' });
  assert.ok(own.issued);
  await app.store.setTokenRateLimit('own', '5/1m');
  const statuses = async (token: string, count: number) => {
    const answers: HttpAnswer[] = [];
    for (let i = 0; i < count; i++) answers.push(await app.post(plant(), { token }));
    return answers;
  };
  const byDefault = await statuses(app.token, 4);
  assert.deepEqual(byDefault.map((answer) => answer.statusCode), [200, 200, 200, 429]);
  for (const answer of byDefault) assertFields(answer, '"default";q=3;w=3600');
  const byOwn = await statuses(own.token, 6);
  assert.deepEqual(byOwn.map((answer) => answer.statusCode), [200, 200, 200, 200, 200, 429]);
  for (const answer of byOwn) assertFields(answer, '"token";q=5;w=60');

  const unlimited = await testApp(t);
  for (let i = 0; i < 20; i++) {
    const answer = await unlimited.post(plant());
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.headers['ratelimit-policy'], undefined);
    assert.equal(answer.headers['ratelimit'], undefined);
  }
});

test('after Retry-After the client is served again', async (t) => {
  const app = await testApp(t, { rateLimit: '2/2s' });
  assert.equal((await app.post(plant())).statusCode, 200);
  assert.equal((await app.post(plant())).statusCode, 200);
  const refused = await app.post(plant());
  assert.equal(refused.statusCode, 429);
  const retryAfter = Number(refused.headers['retry-after']);
  // A create refills in a second.
  assert.equal(retryAfter, 1);
  await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
  const again = await app.post(plant());
  assert.equal(again.statusCode, 200, again.body);
});

test('JWT clients are limited by their subject: two tokens of one sub share a quota, another sub has its own', async (t) => {
  const idp = await startKeySetServer(t);
  const key = await makeKey('ES256');
  idp.publish(key);
  const app = await jwtApp(t, idp, {}, { rateLimit: '2/1h' });
  const first = await signToken(key, claims(idp, { sub: 'alice', jti: 'one' }));
  const second = await signToken(key, claims(idp, { sub: 'alice', jti: 'two' }));
  const other = await signToken(key, claims(idp, { sub: 'bob' }));
  const statuses = [];
  for (const token of [first, second, first, other, other, other]) statuses.push((await app.send(token)).status);
  assert.deepEqual(statuses, [200, 200, 429, 200, 200, 429]);
});

test('a store that cannot be reached for a take answers 503 STORE_UNAVAILABLE, as the create itself would: no new way to fail', async (t) => {
  const app = await testApp(t, {
    rateLimit: '10/1h',
    wrapStore: (real) =>
      storeWith(real, {
        rateLimits: {
          take: () => Promise.reject(new ServiceError('STORE_UNAVAILABLE')),
          giveBack: () => real.rateLimits.giveBack([]),
          prune: () => Promise.resolve(0),
        },
      }),
  });
  const answer = await app.post(plant());
  assert.equal(answer.statusCode, 503);
  assert.equal((answer.json() as { code: string }).code, 'STORE_UNAVAILABLE');
  assert.equal(answer.headers['retry-after'], '1');
});
