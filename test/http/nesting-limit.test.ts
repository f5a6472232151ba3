import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_NESTING } from '../../src/contract/exact-json.js';
import { testApp } from '../helpers/test-app.js';

const nested = (id: number, depth: number) => `{"id":${id},"name":"deep","extra":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;

test('nesting deeper than 1000 levels is refused on every request alike, not as far as the stack happens to reach', async (t) => {
  const { app, token, store } = await testApp(t);
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const post = async (body: string) => {
    const response = await fetch(`${url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    return { status: response.status, body: await response.text() };
  };
  assert.equal(MAX_NESTING, 1000);
  // Before the limit, a body nested 5000 deep was refused while the parser ran cold and accepted once it ran hot.
  for (let round = 0; round < 20; round++) {
    assert.deepEqual(await post(nested(2 * round, MAX_NESTING)), { status: 200, body: '{"name":"deep"}' }, `round ${round}: ${MAX_NESTING} levels`);
    for (const depth of [MAX_NESTING + 1, 5000]) {
      assert.deepEqual(
        await post(nested(2 * round + 1, depth)),
        { status: 400, body: `{"error":400,"message":"The request body is not valid JSON: arrays and objects are nested deeper than ${MAX_NESTING} levels","code":"INVALID_JSON"}` },
        `round ${round}: ${depth} levels`,
      );
    }
  }
  // Brackets inside strings are text, not nesting.
  assert.equal((await post(`{"id":-1,"name":"${'['.repeat(5000)}","tag":"${'{'.repeat(5000)}"}`)).status, 200);
  assert.equal(await store.countPlants(), 21n);
});
