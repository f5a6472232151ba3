import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorBody, testApp } from '../helpers/test-app.js';

const PLANT = JSON.stringify({ id: 1, name: 'Fern' });

test('a body that is not application/json answers 415 after authentication', async (t) => {
  const { post } = await testApp(t);
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/json-patch+json', 'application/jsonx', 'application/json; charset=latin1', 'multipart/form-data; boundary=x']) {
    const response = await post(PLANT, { contentType });
    assert.equal(response.statusCode, 415, contentType);
    assert.match(errorBody(response).message, /^Unsupported media type: send the body as "Content-Type: application\/json" in UTF-8/);
  }
  const missing = await post(PLANT, { contentType: null });
  assert.equal(missing.statusCode, 415);
  assert.equal(errorBody(missing).message, 'Unsupported media type: send the body as "Content-Type: application/json" in UTF-8: the request has no Content-Type');
});

test('application/json with a UTF-8 charset, in any case, is accepted', async (t) => {
  const { post } = await testApp(t);
  for (const [i, contentType] of ['application/json; charset=utf-8', 'Application/JSON;charset="UTF-8"', 'application/json ; charset=utf8'].entries()) {
    const response = await post({ id: i, name: 'Fern' }, { contentType });
    assert.equal(response.statusCode, 200, contentType);
  }
});

test('a body over the limit answers 413', async (t) => {
  const { post } = await testApp(t, { bodyLimit: 1024 });
  const response = await post(JSON.stringify({ id: 1, name: 'x'.repeat(2000) }));
  assert.equal(response.statusCode, 413);
  assert.equal(errorBody(response).message, 'The request body is too large: the limit is 1024 bytes');
  assert.equal(response.headers['connection'], 'close');
  const justUnder = await post(JSON.stringify({ id: 1, name: 'x'.repeat(900) }));
  assert.equal(justUnder.statusCode, 200);
});

test('the default body limit is 64 KiB', async (t) => {
  const { post } = await testApp(t);
  const envelope = '{"id":1,"name":""}'.length;
  assert.equal((await post(`{"id":1,"name":"${'x'.repeat(64 * 1024 - envelope)}"}`)).statusCode, 200);
  assert.equal((await post(`{"id":2,"name":"${'x'.repeat(64 * 1024 - envelope + 1)}"}`)).statusCode, 413);
});

test('bodies that are not a NewPlant answer 400 with a message that names the problem', async (t) => {
  const { post, store } = await testApp(t);
  const cases: [string, string][] = [
    ['', 'The request body is not valid JSON: the body is empty'],
    ['{"id":1,', 'The request body is not valid JSON: Quoted object key expected but reached end of input at position 8'],
    ['{"id":1,"name":"x"} trailing', "The request body is not valid JSON: Expected end of input but got 't' at position 20"],
    ['{"id":0x10,"name":"x"}', "The request body is not valid JSON: Comma ',' expected after value but got 'x' at position 7"],
    ['[]', 'Invalid plant: the body must be a JSON object'],
    ['"plant"', 'Invalid plant: the body must be a JSON object'],
    ['null', 'Invalid plant: the body must be a JSON object'],
    ['42', 'Invalid plant: the body must be a JSON object'],
    ['{"id":1}', 'Invalid plant: name is required'],
    ['{"id":1,"name":5}', 'Invalid plant: name must be a string'],
    ['{"id":1,"name":null}', 'Invalid plant: name must be a string'],
    ['{"id":1,"name":"x","tag":null}', 'Invalid plant: tag must be a string'],
    ['{"id":1,"name":"x","tag":7}', 'Invalid plant: tag must be a string'],
    ['{"id":1,"name":"x","tag":["a"]}', 'Invalid plant: tag must be a string'],
    ['{"id":1,"name":"a","name":"b"}', "The request body is not valid JSON: Duplicate key 'name' encountered at position 20"],
    ['{"__proto__":{"admin":true},"id":1,"name":"x"}', 'The request body is not valid JSON: Object contains forbidden prototype property'],
    ['{"constructor":{"prototype":{"admin":true}},"id":1,"name":"x"}', 'The request body is not valid JSON: Object contains forbidden prototype property'],
  ];
  for (const [body, message] of cases) {
    const response = await post(body);
    assert.equal(response.statusCode, 400, body);
    assert.equal(errorBody(response).message, message, body);
  }
  assert.deepEqual(await store.listPlants({ limit: 10 }), []);
});

test('absurdly deep nesting answers 400, not a crash', async (t) => {
  const { post } = await testApp(t);
  const depth = 30_000;
  const response = await post(`{"id":1,"name":"x","deep":${'['.repeat(depth)}${']'.repeat(depth)}}`);
  assert.equal(response.statusCode, 400);
  errorBody(response);
});

test('an unknown path answers 404 with the Error body', async (t) => {
  const { app } = await testApp(t);
  for (const url of ['/', '/plant', '/plants/1', '/plants/', '/PLANTS']) {
    const response = await app.inject({ method: 'POST', url });
    assert.equal(response.statusCode, 404, url);
    assert.match(errorBody(response).message, /^No such path: POST /);
  }
});

test('another method on a known path answers 405 with Allow', async (t) => {
  const { app } = await testApp(t);
  const cases: [string, string, string][] = [
    ['GET', '/plants', 'POST'],
    ['PUT', '/plants', 'POST'],
    ['DELETE', '/plants', 'POST'],
    ['PATCH', '/plants', 'POST'],
    ['OPTIONS', '/plants', 'POST'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/openapi.json', 'GET, HEAD'],
  ];
  for (const [method, url, allow] of cases) {
    const response = await app.inject({ method: method as 'GET', url });
    assert.equal(response.statusCode, 405, `${method} ${url}`);
    assert.equal(response.headers['allow'], allow);
    assert.equal(errorBody(response).message, `Method not allowed: ${method} ${url}; this path accepts ${allow}`);
  }
  for (const [method, url, contentType, payload] of [
    ['PUT', '/plants', 'text/plain', 'not json'],
    ['PATCH', '/plants', 'application/json', '{'],
    ['POST', '/healthz', 'application/xml', '<a/>'],
  ] as const) {
    const withBody = await app.inject({ method, url, headers: { 'content-type': contentType }, payload });
    assert.equal(withBody.statusCode, 405, `${method} ${url} with a ${contentType} body`);
  }
  const head = await app.inject({ method: 'HEAD', url: '/plants' });
  assert.equal(head.statusCode, 405);
  assert.equal(head.headers['allow'], 'POST');
});
