import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateToken, hashToken } from '../../src/tokens/api-token.js';
import { errorBody, testApp } from '../helpers/test-app.js';

const CHALLENGE = 'Bearer realm="plantstore"';
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="plantstore", error="invalid_token"';
const PLANT = { id: 1, name: 'Fern' };

test('no Authorization header answers 401 with the bare bearer challenge', async (t) => {
  const { post } = await testApp(t);
  const response = await post(PLANT, { token: null });
  assert.equal(response.statusCode, 401);
  assert.equal(response.headers['www-authenticate'], CHALLENGE);
  assert.equal(
    errorBody(response).message,
    'Authentication required: send the header "Authorization: Bearer <token>"',
  );
});

test('an Authorization header that is not "Bearer <token>" answers 401 with the bare challenge', async (t) => {
  const { post, token } = await testApp(t);
  for (const header of [`Basic ${token}`, 'Bearer', 'Bearer ', `Bearer ${token} extra`, token, `Bearer\t${token}`, `Bearer ${token},`]) {
    const response = await post(PLANT, { token: null, headers: { authorization: header } });
    assert.equal(response.statusCode, 401, header);
    assert.equal(response.headers['www-authenticate'], CHALLENGE, header);
    errorBody(response);
  }
});

test('the scheme word is case-insensitive', async (t) => {
  const { post, token } = await testApp(t);
  for (const [i, scheme] of ['bearer', 'BEARER', 'BeArEr'].entries()) {
    const response = await post({ id: i, name: 'Fern' }, { token: null, headers: { authorization: `${scheme} ${token}` } });
    assert.equal(response.statusCode, 200, scheme);
  }
});

test('an unknown token answers 401 with error="invalid_token"', async (t) => {
  const { post } = await testApp(t);
  for (const token of [generateToken(), 'ps_short', 'not-even-prefixed']) {
    const response = await post(PLANT, { token });
    assert.equal(response.statusCode, 401);
    assert.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
    assert.equal(errorBody(response).message, 'The bearer token is unknown, revoked or expired');
    assert.ok(!response.body.includes(token), 'the token is not echoed');
  }
});

test('a token no store can hold (longer or shorter than a store token, or of another shape) answers as an unknown one does, is never looked up, and counts towards AUTH_FAILURE_LIMIT', async (t) => {
  const { app, post } = await testApp(t, { authFailureLimit: 5 });
  const lookups = async () => /^plantstore_token_lookups_total\{outcome="unknown"\} (\d+)$/m.exec((await app.inject({ method: 'GET', url: '/metrics' })).body)?.[1];
  const unknown = await post(PLANT, { token: generateToken() });
  assert.equal(await lookups(), '1');
  for (const token of ['A'.repeat(16_000), `ps_${'A'.repeat(44)}`, 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln', 'ps_short']) {
    const response = await post(PLANT, { token });
    assert.equal(response.statusCode, 401, token.slice(0, 50));
    assert.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
    assert.deepEqual(errorBody(response), errorBody(unknown));
  }
  assert.equal(await lookups(), '1', 'none of them was looked up');
  const limited = await post(PLANT, { token: 'A'.repeat(16_000) });
  assert.equal(limited.statusCode, 429, 'the sixth failure from this address is one too many');
});

test('a revoked token is refused once the token cache has forgotten it, with no restart', async (t) => {
  let now = Date.now();
  const { post, store, token } = await testApp(t, { tokenCacheTtlMs: 500, now: () => now });
  assert.equal((await post({ id: 1, name: 'before' })).statusCode, 200);
  await store.revokeToken({ name: 'test' }, new Date());
  now += 499;
  assert.equal((await post({ id: 2, name: 'remembered' })).statusCode, 200, 'still remembered within TOKEN_CACHE_TTL_MS');
  now += 1;
  const response = await post({ id: 3, name: 'after' });
  assert.equal(response.statusCode, 401);
  assert.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
  assert.deepEqual((await store.listPlants({ limit: 10 })).map((plant) => plant.name), ['before', 'remembered']);
  assert.ok(!response.body.includes(token));
});

test('an expired token is refused at once, even while remembered', async (t) => {
  let now = Date.now();
  const { post, store } = await testApp(t, { tokenCacheTtlMs: 1000, now: () => now });
  const token = generateToken();
  const expiresAt = new Date(now + 300);
  await store.insertToken({ name: 'short', hash: hashToken(token), createdAt: new Date(now), expiresAt });
  assert.equal((await post({ id: 1, name: 'in time' }, { token })).statusCode, 200);
  now = expiresAt.getTime();
  const response = await post({ id: 2, name: 'too late' }, { token });
  assert.equal(response.statusCode, 401);
  assert.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
});

test('authentication is checked before the media type and the body', async (t) => {
  const { post } = await testApp(t);
  const noToken = await post('not json', { token: null, contentType: 'text/plain' });
  assert.equal(noToken.statusCode, 401);
  const badToken = await post('not json', { token: generateToken(), contentType: 'text/plain' });
  assert.equal(badToken.statusCode, 401);
  const tooLarge = await post('x'.repeat(100 * 1024), { token: null });
  assert.equal(tooLarge.statusCode, 401);
});

test('health and the contract need no token', async (t) => {
  const { app } = await testApp(t);
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  assert.equal(health.statusCode, 200);
  assert.deepEqual(health.json(), { status: 'ok' });
  const contract = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(contract.statusCode, 200);
});
