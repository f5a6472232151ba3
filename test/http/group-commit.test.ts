import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import { gatedStore } from '../helpers/gated-store.js';
import { errorBody, testApp } from '../helpers/test-app.js';

test('concurrent creates share commits, and every one is stored', async (t) => {
  const { app, post, store } = await testApp(t);
  const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => post({ id: i, name: `plant ${i}` })));
  assert.deepEqual(new Set(responses.map((response) => response.statusCode)), new Set([200]));
  assert.ok(app.groupCommit.commits < 20, `${app.groupCommit.commits} commits for 100 creates`);
  assert.equal(await store.countPlants(), 100n);
});

test('a lone request commits at once: one commit per request when they come one at a time', async (t) => {
  const { app, post } = await testApp(t);
  for (let id = 0; id < 5; id++) assert.equal((await post({ id, name: 'alone' })).statusCode, 200);
  assert.equal(app.groupCommit.commits, 5);
});

test('in one batch, a conflict answers 409 alone and duplicate ids follow the contract', async (t) => {
  const { app, post, store } = await testApp(t);
  await post({ id: 1, name: 'stored' });
  const before = app.groupCommit.commits;
  const bodies = [
    { id: 1, name: 'other' },
    { id: 2, name: 'new' },
    { id: 3, name: 'twice' },
    { id: 3, name: 'twice' },
    { id: 4, name: 'first' },
    { id: 4, name: 'second' },
  ];
  const responses = await Promise.all(bodies.map((body) => post(body)));
  assert.equal(app.groupCommit.commits - before, 1, 'all in one batch');
  assert.deepEqual(responses.map((response) => response.statusCode), [409, 200, 200, 200, 200, 409]);
  assert.match(errorBody(responses[5]!).message, /id 4 is taken by another plant/);
  assert.deepEqual(await store.listPlants({ limit: 10 }), [
    { id: 1n, name: 'stored' },
    { id: 2n, name: 'new' },
    { id: 3n, name: 'twice' },
    { id: 4n, name: 'first' },
  ]);
});

test('a full write queue answers 503 with Retry-After, and the others are stored', async (t) => {
  let gate: ReturnType<typeof gatedStore> | undefined;
  const { post, store } = await testApp(t, { writeQueueMax: 1, wrapStore: (real) => (gate = gatedStore(real)) });
  gate!.hold();
  const inFlight = post({ id: 1, name: 'in flight' });
  for (let turn = 0; turn < 1000 && gate!.batches.length === 0; turn++) await nextTurn();
  const queued = post({ id: 2, name: 'queued' });
  await nextTurn();
  const refused = await post({ id: 3, name: 'refused' });
  assert.equal(refused.statusCode, 503);
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(errorBody(refused).message, 'The server has more writes waiting than it accepts; retry later: 1 plants are waiting to be written');
  gate!.release();
  assert.equal((await inFlight).statusCode, 200);
  assert.equal((await queued).statusCode, 200);
  assert.deepEqual((await store.listPlants({ limit: 10 })).map((plant) => plant.id), [1n, 2n]);
});
