import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { clientAddress } from '../../src/http/client-address.js';
import { type HttpAnswer, testApp } from '../helpers/test-app.js';

const json = { 'content-type': 'application/json' };

test('the creates whose headers settle everything but the body are served before Fastify; every other goes to Fastify', async (t) => {
  const { app, request, token } = await testApp(t);
  const reachedFastify: string[] = [];
  app.addHook('onRequest', (incoming, _reply, done) => {
    reachedFastify.push(String(incoming.headers['x-case']));
    done();
  });
  const auth = { authorization: `Bearer ${token}` };
  const create = async (name: string, headers: Record<string, string>, options: { url?: string; chunked?: boolean; body?: string } = {}) => {
    const answer = await request({ method: 'POST', url: options.url ?? '/plants', headers: { ...headers, 'x-case': name }, payload: options.body ?? `{"id":1,"name":"Fern"}`, chunked: options.chunked ?? false });
    return answer.statusCode;
  };
  // The token's first use is checked against the store, in Fastify's route; from then on it is remembered.
  assert.equal(await create('first use of the token', { ...auth, ...json }), 200);
  assert.equal(await create('remembered token', { ...auth, ...json }), 200);
  assert.equal(await create('charset named', { ...auth, 'content-type': 'application/json; charset=utf-8' }), 200);
  assert.equal(await create('invalid body', { ...auth, ...json }, { body: '{"id":1}' }), 400);
  assert.equal(await create('chunked body', { ...auth, ...json }, { chunked: true }), 200);
  assert.equal(await create('query string', { ...auth, ...json }, { url: '/plants?x=1' }), 200);
  assert.equal(await create('no token', json), 401);
  assert.equal(await create('unknown token', { authorization: 'Bearer nope', ...json }), 401);
  assert.equal(await create('another media type', { ...auth, 'content-type': 'text/plain' }), 415);
  assert.equal(await create('empty body', { ...auth, ...json }, { body: '' }), 400);
  assert.deepEqual(reachedFastify, ['first use of the token', 'chunked body', 'query string', 'no token', 'unknown token', 'another media type', 'empty body']);
});

/** What must be the same whichever way a create was served: all but the request id, the date and the connection's. */
function comparable(answer: HttpAnswer) {
  const { 'x-request-id': id, date: _date, connection: _connection, 'keep-alive': _keepAlive, ...headers } = answer.headers;
  assert.match(String(id), /^[0-9a-f-]{36}$/);
  return { status: answer.statusCode, headers, body: answer.body };
}

test('both ways answer every create alike: status, headers and body, from a 200 to each error', async (t) => {
  const direct = await testApp(t);
  const throughFastify = await testApp(t);
  let reachedFastify = 0;
  // The commits made before each create the direct app's Fastify saw: asserted after, not in the hook,
  // where a failed assertion would only turn the answer into a 500.
  const directFastifyCommits: number[] = [];
  for (const served of [direct, throughFastify]) {
    served.app.addHook('onRequest', (_request, _reply, done) => {
      if (served === throughFastify) reachedFastify += 1;
      else directFastifyCommits.push(direct.app.groupCommit.commits);
      done();
    });
  }
  const bodies = [
    '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}',
    '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}',
    '{"id":9007199254740993,"name":"Monstera"}',
    '{"id":-9223372036854775808,"name":"lowest"}',
    '{"id":9223372036854775808,"name":"past the highest"}',
    '{"id":1.5,"name":"fraction"}',
    '{"id":"1","name":"string id"}',
    '{"id":2,"name":"x","id":3}',
    '{"id":2,"name":"\\ud800"}',
    '{"id":2,"name":"a\\u0000"}',
    '{"id":2,"name":"Fern","__proto__":{"admin":true}}',
    '{"id":2,"name":"Grüne Monstera 🌿","extra":[1,{"a":null}]}',
    `{"id":3,"name":"deep","x":${'['.repeat(1001)}${']'.repeat(1001)}}`,
    '[1,2]',
    '{"id":4,"name":"cut',
    '\u00ff',
  ];
  // Each token's first use goes to Fastify in both apps; after it, `direct` serves its creates directly.
  const warm = '{"id":1,"name":"warm-up"}';
  for (const served of [direct, throughFastify]) assert.equal((await served.post(warm)).statusCode, 200);
  for (const body of bodies) {
    const headers = { authorization: '', ...json };
    const ours = await direct.request({ method: 'POST', url: '/plants', headers: { ...headers, authorization: `Bearer ${direct.token}` }, payload: body });
    const theirs = await throughFastify.request({ method: 'POST', url: '/plants', headers: { ...headers, authorization: `Bearer ${throughFastify.token}` }, payload: body, chunked: true });
    assert.deepEqual(comparable(ours), comparable(theirs), body.slice(0, 80));
  }
  assert.equal(reachedFastify, 1 + bodies.length, 'every chunked create was Fastify\'s');
  assert.deepEqual(directFastifyCommits, [0], 'in the direct app only the first create, before any commit, reached Fastify');
  assert.deepEqual(await direct.store.listPlants({ limit: 100 }), await throughFastify.store.listPlants({ limit: 100 }));
});

test("the direct route names the client as Fastify's request.ip does, behind TRUST_PROXY or not", async (t) => {
  for (const trustProxy of [undefined, ['127.0.0.1'], ['loopback', '10.0.0.0/8']]) {
    const app = Fastify({ trustProxy: trustProxy === undefined ? false : trustProxy });
    const address = clientAddress(trustProxy);
    app.get('/ip', async (request) => ({ fastify: request.ip, direct: address(request.raw) }));
    t.after(() => app.close());
    for (const forwarded of [undefined, '203.0.113.7', '198.51.100.1, 10.1.2.3', 'nonsense, 10.0.0.1', '']) {
      const answer = await app.inject({ method: 'GET', url: '/ip', remoteAddress: '127.0.0.1', headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } });
      const { fastify, direct } = answer.json() as { fastify: string; direct: string };
      assert.equal(direct, fastify, `${JSON.stringify(trustProxy)} with X-Forwarded-For ${JSON.stringify(forwarded)}`);
    }
  }
});
