import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { errorBody, testApp } from '../helpers/test-app.js';

const ID_MESSAGE = 'Invalid plant: id must be an integer from -9223372036854775808 to 9223372036854775807';

for (const backend of await testBackends('int64 ids')) {
  test(`${backend.name}: 2^53 and 2^53 + 1 are two different plants`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    assert.equal((await post('{"id":9007199254740992,"name":"even"}')).statusCode, 200);
    assert.equal((await post('{"id":9007199254740993,"name":"odd"}')).statusCode, 200);
    assert.deepEqual(await store.listPlants({ limit: 10 }), [
      { id: 9007199254740992n, name: 'even' },
      { id: 9007199254740993n, name: 'odd' },
    ]);
  });

  test(`${backend.name}: the ends of the int64 range are valid ids`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    for (const id of ['9223372036854775807', '-9223372036854775807', '-9223372036854775808', '0']) {
      const response = await post(`{"id":${id},"name":"edge ${id}"}`);
      assert.equal(response.statusCode, 200, id);
    }
    assert.deepEqual(
      (await store.listPlants({ limit: 10 })).map((plant) => plant.id),
      [-9223372036854775808n, -9223372036854775807n, 0n, 9223372036854775807n],
    );
  });

  test(`${backend.name}: a number whose value is an integer is that integer, however it is written`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    const cases: [string, bigint][] = [
      ['1.0', 1n],
      ['1e3', 1000n],
      ['2E+1', 20n],
      ['-0', 0n],
      ['12.50e1', 125n],
      ['0.0000000000000000002e19', 2n],
      ['9223372036854775807.000', 9223372036854775807n],
    ];
    for (const [text, id] of cases) {
      const response = await post(`{"id":${text},"name":"n${id}"}`);
      assert.equal(response.statusCode, 200, text);
      const replay = await post(`{"id":${id},"name":"n${id}"}`);
      assert.equal(replay.statusCode, 200, `${text} is the same plant as ${id}`);
    }
    assert.equal((await store.listPlants({ limit: 100 })).length, cases.length);
  });

  test(`${backend.name}: ids outside int64, with a fraction, or of another type answer 400 and name the field`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    const bad = [
      '9223372036854775808',
      '-9223372036854775809',
      '18446744073709551616',
      '1e19',
      '1e400',
      '-1e400',
      '1.5',
      '9007199254740993.5',
      '1e-400',
      '"1"',
      'null',
      'true',
      '[1]',
      '{"value":1}',
    ];
    for (const id of bad) {
      const response = await post(`{"id":${id},"name":"bad"}`);
      assert.equal(response.statusCode, 400, id);
      assert.equal(errorBody(response).message, ID_MESSAGE, id);
    }
    assert.deepEqual(await store.listPlants({ limit: 10 }), []);
  });

  test(`${backend.name}: a missing id answers 400`, async (t) => {
    const { post } = await testApp(t, { backend });
    const response = await post({ name: 'no id' });
    assert.equal(response.statusCode, 400);
    assert.equal(errorBody(response).message, 'Invalid plant: id is required');
  });
}
