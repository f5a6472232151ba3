import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testApp } from '../helpers/test-app.js';

test('every answer carries nosniff and no-store: success, errors, and the routes without a token', async (t) => {
  const { app, post } = await testApp(t);
  const answers = [
    await post({ id: 1, name: 'Fern' }),
    await post({ id: 1, name: 'Rose' }),
    await post('nope'),
    await post({ id: 2, name: 'x' }, { token: null }),
    await post({ id: 2, name: 'x' }, { contentType: 'text/plain' }),
    await app.inject({ method: 'GET', url: '/nowhere' }),
    await app.inject({ method: 'GET', url: '/plants' }),
    await app.inject({ method: 'GET', url: '/healthz' }),
    await app.inject({ method: 'GET', url: '/readyz' }),
    await app.inject({ method: 'GET', url: '/openapi.json' }),
  ];
  for (const answer of answers) {
    assert.equal(answer.headers['x-content-type-options'], 'nosniff', `${answer.statusCode} ${answer.body.slice(0, 40)}`);
    assert.equal(answer.headers['cache-control'], 'no-store', `${answer.statusCode}`);
  }
});
