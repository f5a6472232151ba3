import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateToken } from '../../src/tokens/api-token.js';
import { issueToken } from '../../src/tokens/issue-token.js';
import { errorBody, testApp } from '../helpers/test-app.js';

/** The value of one sample in Prometheus text; a missing series fails the test rather than reading 0. */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}${labels} `));
  assert.ok(line !== undefined, `the series ${name}${labels} is there`);
  return Number(line.split(' ')[1]);
}

test('GET /metrics serves the Prometheus text format, and the counters move with requests', async (t) => {
  const { app, post } = await testApp(t);
  const read = async () => {
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return response.body;
  };
  const before = await read();
  for (const name of [
    'plantstore_http_request_duration_seconds',
    'plantstore_plant_creates_total',
    'plantstore_auth_failures_total',
    'plantstore_store_commit_duration_seconds',
    'plantstore_store_commit_batch_size',
    'process_cpu_seconds_total',
    'nodejs_eventloop_lag_seconds',
  ]) {
    assert.match(before, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }

  await post({ id: 1, name: 'Fern' });
  await post({ id: 1, name: 'Fern' });
  await post({ id: 1, name: 'Rose' });
  await post({ id: 2, name: 'x' }, { token: null });
  await post({ id: 2, name: 'x' }, { token: generateToken() });
  const after = await read();
  assert.ok(!after.includes('plantstore_auth_failures_total{reason="revoked"}'), 'no series before its first failure');

  assert.equal(sample(after, 'plantstore_plant_creates_total', '{outcome="created"}'), 1);
  assert.equal(sample(after, 'plantstore_plant_creates_total', '{outcome="replayed"}'), 1);
  assert.equal(sample(after, 'plantstore_plant_creates_total', '{outcome="conflict"}'), 1);
  assert.equal(sample(after, 'plantstore_auth_failures_total', '{reason="missing"}'), 1);
  assert.equal(sample(after, 'plantstore_auth_failures_total', '{reason="unknown"}'), 1);
  assert.equal(sample(after, 'plantstore_store_commit_batch_size_count'), 3);
  assert.equal(sample(after, 'plantstore_store_commit_duration_seconds_count'), 3);
  assert.equal(sample(after, 'plantstore_http_request_duration_seconds_count', '{route="/plants",method="POST",status="200"}'), 2);
  assert.equal(sample(after, 'plantstore_http_request_duration_seconds_count', '{route="/plants",method="POST",status="409"}'), 1);
  assert.equal(sample(after, 'plantstore_http_request_duration_seconds_count', '{route="/plants",method="POST",status="401"}'), 2);
});

test('with METRICS_TOKEN set, GET /metrics asks for it, read as POST /plants reads a bearer token', async (t) => {
  const { app } = await testApp(t, { metricsToken: 'scrape-me-0123456789' });
  const without = await app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(without.statusCode, 401);
  assert.equal(without.headers['www-authenticate'], 'Bearer realm="plantstore"');
  for (const wrong of ['Bearer scrape-you-0123456789', 'Bearer scrape-me-012345678', 'Bearer s', 'Basic c2NyYXBlLW1l']) {
    const refused = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: wrong } });
    assert.equal(refused.statusCode, 401, wrong);
    assert.equal(errorBody(refused).code, wrong.startsWith('Basic') ? 'MISSING_CREDENTIALS' : 'INVALID_TOKEN', wrong);
  }
  for (const right of ['Bearer scrape-me-0123456789', 'bearer  scrape-me-0123456789 ']) {
    assert.equal((await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: right } })).statusCode, 200, right);
  }
});

test('wrong metrics tokens count towards the limit of failed authentications that POST /plants shares', async (t) => {
  const { app, post, token } = await testApp(t, { metricsToken: 'scrape-me-0123456789', authFailureLimit: 3 });
  const scrape = (authorization?: string) =>
    app.inject({ method: 'GET', url: '/metrics', headers: authorization === undefined ? {} : { authorization } });
  assert.equal((await scrape('Bearer guess-0000000000000')).statusCode, 401);
  assert.equal((await scrape()).statusCode, 401, 'a missing token counts too');
  assert.equal((await post({ id: 1, name: 'x' }, { token: null })).statusCode, 401, 'and so does a failure on POST /plants');

  const limited = await scrape('Bearer guess-0000000000001');
  assert.equal(limited.statusCode, 429);
  const wait = Number(limited.headers['retry-after']);
  assert.ok(wait >= 1 && wait <= 60, `Retry-After: ${wait}`);
  assert.deepEqual(errorBody(limited), {
    error: 429,
    message: 'Too many failed authentications from this address; retry after the time in Retry-After',
    code: 'TOO_MANY_AUTH_FAILURES',
  });
  assert.equal((await scrape('Bearer scrape-me-0123456789')).statusCode, 200, 'the right token is still served');
  assert.equal((await post({ id: 1, name: 'x' }, { token: generateToken() })).statusCode, 429, 'the API refuses the address too');
  assert.equal((await post({ id: 1, name: 'x' }, { token })).statusCode, 200);
  const elsewhere = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '192.0.2.7', headers: { authorization: 'Bearer guess-0000000000002' } });
  assert.equal(elsewhere.statusCode, 401, 'another address has its own count');

  const text = (await scrape('Bearer scrape-me-0123456789')).body;
  for (const [reason, count] of [['unknown', 2], ['missing', 2], ['rate_limited', 2]] as const) {
    assert.equal(sample(text, 'plantstore_auth_failures_total', `{reason="${reason}"}`), count, reason);
  }
});

test('a well-formed X-Request-Id is kept and echoed; any other is replaced', async (t) => {
  const { app, post } = await testApp(t);
  const kept = await post({ id: 1, name: 'x' }, { headers: { 'x-request-id': 'edge-7f3a:42' } });
  assert.equal(kept.headers['x-request-id'], 'edge-7f3a:42');
  for (const incoming of ['has space', 'x'.repeat(200), '"quoted"', '']) {
    const replaced = await post({ id: 2, name: 'x' }, { headers: { 'x-request-id': incoming } });
    assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, incoming);
  }
  const errors = await app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'lost-1' } });
  assert.equal(errors.headers['x-request-id'], 'lost-1');
});

test('every reason of a failed authentication has its own series', async (t) => {
  const { app, post, store } = await testApp(t, { authFailureLimit: 5 });
  const revoked = await issueToken(store, { name: 'revoked' });
  const expired = await issueToken(store, { name: 'expired', expiresInMs: 60_000 }, new Date(Date.now() - 3_600_000));
  assert.ok(revoked.issued && expired.issued);
  await store.revokeToken({ name: 'revoked' }, new Date());
  const statuses = [
    (await post({ id: 1, name: 'x' }, { token: null })).statusCode,
    (await post({ id: 1, name: 'x' }, { token: generateToken() })).statusCode,
    (await post({ id: 1, name: 'x' }, { token: revoked.token })).statusCode,
    (await post({ id: 1, name: 'x' }, { token: expired.token })).statusCode,
    (await post({ id: 1, name: 'x' }, { token: null })).statusCode,
    (await post({ id: 1, name: 'x' }, { token: null })).statusCode,
  ];
  assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  for (const [reason, count] of [['missing', 2], ['unknown', 1], ['revoked', 1], ['expired', 1], ['rate_limited', 1]] as const) {
    assert.equal(sample(text, 'plantstore_auth_failures_total', `{reason="${reason}"}`), count, reason);
  }
});
