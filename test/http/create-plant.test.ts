import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testBackends } from '../helpers/backends.js';
import { errorBody, testApp } from '../helpers/test-app.js';


for (const backend of await testBackends('creating plants')) {
  test(`${backend.name}: a valid NewPlant answers 200 with exactly the Plant, as JSON`, async (t) => {
    const { post } = await testApp(t, { backend });
    const response = await post({ id: 1, name: 'Monstera', tag: 'aroid' });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^application\/json(;|$)/);
    assert.equal(response.body, '{"name":"Monstera","tag":"aroid"}');
  });

  test(`${backend.name}: a plant without a tag answers without a tag`, async (t) => {
    const { post } = await testApp(t, { backend });
    const response = await post({ id: 2, name: 'Fern' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, '{"name":"Fern"}');
  });

  test(`${backend.name}: an empty tag is a tag, kept apart from no tag`, async (t) => {
    const { post } = await testApp(t, { backend });
    assert.equal((await post({ id: 3, name: 'Fern', tag: '' })).body, '{"name":"Fern","tag":""}');
    assert.equal((await post({ id: 3, name: 'Fern' })).statusCode, 409);
  });

  test(`${backend.name}: properties beyond the schema are accepted and ignored`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    const response = await post({ id: 4, name: 'Cactus', colour: 'green', nested: { deep: [1, 2.5, null] } });
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, '{"name":"Cactus"}');
    assert.deepEqual(await store.listPlants({ limit: 10 }), [{ id: 4n, name: 'Cactus' }]);
  });

  test(`${backend.name}: posting the same plant again answers 200 again and stores it once`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    const plant = { id: 5, name: 'Ivy', tag: 'climber' };
    const first = await post(plant);
    const retry = await post(plant);
    assert.equal(first.statusCode, 200);
    assert.equal(retry.statusCode, 200);
    assert.equal(retry.body, first.body);
    assert.deepEqual(await store.listPlants({ limit: 10 }), [{ id: 5n, name: 'Ivy', tag: 'climber' }]);
  });

  test(`${backend.name}: another plant under a taken id answers 409 and changes nothing`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    await post({ id: 6, name: 'Ivy', tag: 'climber' });
    for (const other of [{ id: 6, name: 'Rose', tag: 'climber' }, { id: 6, name: 'Ivy', tag: 'shrub' }, { id: 6, name: 'Ivy' }]) {
      const response = await post(other);
      assert.equal(response.statusCode, 409);
      assert.equal(
        errorBody(response).message,
        'A plant with this id already exists with a different name or tag: id 6 is taken by another plant',
      );
    }
    assert.deepEqual(await store.listPlants({ limit: 10 }), [{ id: 6n, name: 'Ivy', tag: 'climber' }]);
  });

  test(`${backend.name}: concurrent posts of one id never both create`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => post({ id: 7, name: `plant ${i % 4}` })),
    );
    const stored = await store.listPlants({ limit: 10 });
    assert.equal(stored.length, 1);
    const winner = stored[0]!.name;
    responses.forEach((response, i) => {
      const expected = `plant ${i % 4}` === winner ? 200 : 409;
      assert.equal(response.statusCode, expected, `request ${i}`);
    });
  });

  test(`${backend.name}: names and tags that no store can keep exactly are refused`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    const loneSurrogate = await post('{"id":8,"name":"\\ud800"}');
    assert.equal(loneSurrogate.statusCode, 400);
    assert.equal(errorBody(loneSurrogate).message, 'Invalid plant: name must be valid Unicode text (it holds a lone surrogate)');
    const nul = await post('{"id":8,"name":"x","tag":"a\\u0000b"}');
    assert.equal(nul.statusCode, 400);
    assert.equal(errorBody(nul).message, 'Invalid plant: tag must not contain the NUL character (U+0000)');
    assert.deepEqual(await store.listPlants({ limit: 10 }), []);
  });

  test(`${backend.name}: any other Unicode is stored and answered exactly`, async (t) => {
    const { post, store } = await testApp(t, { backend });
    const name = 'Grüne 🌵 "Kaktus" \\ \n\t \u2028';
    const response = await post({ id: 9, name, tag: '日本' });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { name, tag: '日本' });
    assert.deepEqual(await store.listPlants({ limit: 10 }), [{ id: 9n, name, tag: '日本' }]);
  });
}
