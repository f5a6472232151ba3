import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatedStore } from '../helpers/gated-store.js';
import { errorBody, testApp } from '../helpers/test-app.js';
import { until } from '../helpers/until.js';

/** A real app whose store holds its commits at a gate while the test lines up the creates that arrive meanwhile. */
async function gatedApp(t: Parameters<typeof testApp>[0], config: Parameters<typeof testApp>[1] = {}) {
  let gate: ReturnType<typeof gatedStore> | undefined;
  const served = await testApp(t, { ...config, wrapStore: (real) => (gate = gatedStore(real)) });
  return { ...served, gate: gate! };
}

test('creates that arrive while a commit is in flight share the next commit, and every one is stored', async (t) => {
  const { app, post, store, gate } = await gatedApp(t);
  gate.hold();
  const first = post({ id: 0, name: 'plant 0' });
  await until('the first create is being committed', () => gate.batches.length === 1);
  const rest = Array.from({ length: 99 }, (_, i) => post({ id: i + 1, name: `plant ${i + 1}` }));
  await until('the other 99 wait for the next commit', () => app.groupCommit.waiting === 99);
  gate.release();
  const responses = await Promise.all([first, ...rest]);
  assert.deepEqual(new Set(responses.map((response) => response.statusCode)), new Set([200]));
  assert.deepEqual(gate.batches, [1, 99], 'one commit for the first, one for the 99 behind it');
  assert.equal(app.groupCommit.commits, 2);
  assert.equal(await store.countPlants(), 100n);
});

test('a lone request commits at once: one commit per request when they come one at a time', async (t) => {
  const { app, post } = await testApp(t);
  for (let id = 0; id < 5; id++) assert.equal((await post({ id, name: 'alone' })).statusCode, 200);
  assert.equal(app.groupCommit.commits, 5);
});

test('in one batch, a conflict answers 409 alone and duplicate ids follow the contract', async (t) => {
  const { app, post, store, gate } = await gatedApp(t);
  await post({ id: 1, name: 'stored' });
  // A create held in its commit, so that the six below line up behind it for one batch.
  gate.hold();
  const held = post({ id: 99, name: 'held' });
  await until('the held create is being committed', () => gate.batches.length === 2);
  const bodies = [
    { id: 1, name: 'other' },
    { id: 2, name: 'new' },
    { id: 3, name: 'twice' },
    { id: 3, name: 'twice' },
    { id: 4, name: 'first' },
    { id: 4, name: 'second' },
  ];
  const answers = bodies.map((body) => post(body));
  await until('the six wait for the next commit', () => app.groupCommit.waiting === bodies.length);
  gate.release();
  assert.equal((await held).statusCode, 200);
  const responses = await Promise.all(answers);
  assert.deepEqual(gate.batches, [1, 1, 6], 'the six in one batch');
  assert.deepEqual(responses.map((response) => response.statusCode), [409, 200, 200, 200, 200, 409]);
  assert.match(errorBody(responses[5]!).message, /id 4 is taken by another plant/);
  assert.deepEqual(await store.listPlants({ limit: 10 }), [
    { id: 1n, name: 'stored' },
    { id: 2n, name: 'new' },
    { id: 3n, name: 'twice' },
    { id: 4n, name: 'first' },
    { id: 99n, name: 'held' },
  ]);
});

test('a full write queue answers 503 with Retry-After, and the others are stored', async (t) => {
  const { app, post, store, gate } = await gatedApp(t, { writeQueueMax: 1 });
  gate.hold();
  const inFlight = post({ id: 1, name: 'in flight' });
  await until('the first create is being committed', () => gate.batches.length === 1);
  const queued = post({ id: 2, name: 'queued' });
  await until('the second create waits in the queue', () => app.groupCommit.waiting === 1);
  const refused = await post({ id: 3, name: 'refused' });
  assert.equal(refused.statusCode, 503);
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(errorBody(refused).message, 'The server has more writes waiting than it accepts; retry later: 1 plants are waiting to be written');
  gate.release();
  assert.equal((await inFlight).statusCode, 200);
  assert.equal((await queued).statusCode, 200);
  assert.deepEqual((await store.listPlants({ limit: 10 })).map((plant) => plant.id), [1n, 2n]);
});
