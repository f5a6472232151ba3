import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateToken } from '../../src/tokens/api-token.js';
import { contractAjv as ajv, openApiFile as document, rebase } from '../helpers/openapi.js';
import { testApp } from '../helpers/test-app.js';

function responseSpec(path: string, method: string, status: number): { content: Record<string, { schema: unknown }> } {
  const responses = document.paths[path][method].responses;
  let spec = responses[String(status)];
  assert.ok(spec, `the document declares ${status} for ${method.toUpperCase()} ${path}`);
  if (spec.$ref) spec = document.components.responses[spec.$ref.split('/').at(-1)];
  return spec;
}

function assertMatches(schema: unknown, body: unknown, what: string): void {
  const validate = ajv.compile(rebase(schema));
  assert.ok(validate(body), `${what}: ${JSON.stringify(body)} ${ajv.errorsText(validate.errors)}`);
}

test('the document is faithful to the spec', () => {
  assert.equal(document.openapi, '3.1.0');
  assert.equal(document.info.title, 'Plant Store');
  assert.equal(document.info.version, '1.0.0');
  assert.equal(document.info.license.name, 'MIT');
  assert.deepEqual(document.security, [{ bearerAuth: [] }]);
  assert.deepEqual(document.components.securitySchemes.bearerAuth.type, 'http');
  assert.deepEqual(document.components.securitySchemes.bearerAuth.scheme, 'bearer');
  assert.deepEqual(document.components.schemas.Plant.required, ['name']);
  assert.deepEqual(document.components.schemas.Error.required, ['error', 'message']);
  assert.equal(document.components.schemas.Error.properties.error.format, 'int32');
  const idPart = document.components.schemas.NewPlant.allOf[1];
  assert.deepEqual(idPart.required, ['id']);
  assert.deepEqual(idPart.properties.id, { ...idPart.properties.id, type: 'integer', format: 'int64' });
  assert.equal(document.paths['/plants'].post.requestBody.required, true);
});

test('GET /openapi.json serves the document in the repository', async (t) => {
  const { app } = await testApp(t);
  const response = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  assert.deepEqual(response.json(), document);
});

test('every answer of POST /plants has the status and shape the document declares for it', async (t) => {
  const { post } = await testApp(t, { bodyLimit: 1024 });
  const cases: { body: string; token?: string | null; contentType?: string; status: number }[] = [
    { body: '{"id":1,"name":"Fern","tag":"leafy"}', status: 200 },
    { body: '{"id":1,"name":"Fern","tag":"leafy"}', status: 200 },
    { body: '{"id":2,"name":"Fern"}', status: 200 },
    { body: '{"id":1,"name":"Rose"}', status: 409 },
    { body: '{"id":3}', status: 400 },
    { body: 'nope', status: 400 },
    { body: '{"id":1,"name":"x"}', token: null, status: 401 },
    { body: '{"id":1,"name":"x"}', token: generateToken(), status: 401 },
    { body: '{"id":1,"name":"x"}', contentType: 'text/plain', status: 415 },
    { body: `{"id":4,"name":"${'x'.repeat(2000)}"}`, status: 413 },
  ];
  for (const { body, token, contentType, status } of cases) {
    const response = await post(body, { ...(token === undefined ? {} : { token }), ...(contentType ? { contentType } : {}) });
    assert.equal(response.statusCode, status, body.slice(0, 40));
    const spec = responseSpec('/plants', 'post', status);
    assertMatches(spec.content['application/json']!.schema, response.json(), `${status}`);
  }
});

test('405 and 404 answers match the document', async (t) => {
  const { app } = await testApp(t);
  const notAllowed = await app.inject({ method: 'GET', url: '/plants' });
  assertMatches(responseSpec('/plants', 'post', 405).content['application/json']!.schema, notAllowed.json(), '405');
  const notFound = await app.inject({ method: 'GET', url: '/nothing' });
  assert.equal(notFound.statusCode, 404);
  assertMatches(document.components.responses.NotFound.content['application/json'].schema, notFound.json(), '404');
});

test('the answer of a 200 is exactly a Plant: no id, nothing extra', async (t) => {
  const { post } = await testApp(t);
  const response = await post('{"id":9,"name":"Fern","tag":"leafy","extra":1}');
  const strict = ajv.compile({ ...rebase(document.components.schemas.Plant), unevaluatedProperties: false });
  assert.ok(strict(response.json()), response.body);
});
