import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { generateToken } from '../../src/tokens/api-token.js';
import { pingBody, WEBHOOK_PING } from '../../src/webhooks/message.js';
import { assertMatches, contractAjv, contractAjv as ajv, openApiFile as document, rebase, responseSpec } from '../helpers/openapi.js';
import { splitAnswers } from '../helpers/http-answers.js';
import { rawConnection } from '../helpers/raw-http.js';
import { testApp } from '../helpers/test-app.js';

test('the document is faithful to the spec', () => {
  assert.equal(document.openapi, '3.1.0');
  assert.equal(document.info.title, 'Plant Store');
  assert.equal(document.info.version, '1.0.0');
  assert.equal(document.info.license.name, 'MIT');
  assert.deepEqual(document.security, [{ bearerAuth: [] }]);
  assert.deepEqual(document.components.securitySchemes.bearerAuth.type, 'http');
  assert.deepEqual(document.components.securitySchemes.bearerAuth.scheme, 'bearer');
  assert.deepEqual(document.components.schemas.Plant.required, ['name']);
  // The spec's two fields, and the code that the service adds for programs.
  assert.deepEqual(document.components.schemas.Error.required, ['error', 'message', 'code']);
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
  // `answer`: a 200's exact body; `challenge`: a 401's WWW-Authenticate (RFC 6750: no error code without credentials).
  const cases: { body: string; token?: string | null; contentType?: string; status: number; answer?: string; challenge?: string }[] = [
    { body: '{"id":1,"name":"Fern","tag":"leafy"}', status: 200, answer: '{"name":"Fern","tag":"leafy"}' },
    { body: '{"id":1,"name":"Fern","tag":"leafy"}', status: 200, answer: '{"name":"Fern","tag":"leafy"}' },
    { body: '{"id":2,"name":"Fern"}', status: 200, answer: '{"name":"Fern"}' },
    { body: '{"id":1,"name":"Rose"}', status: 409 },
    { body: '{"id":3}', status: 400 },
    { body: 'nope', status: 400 },
    { body: '{"id":1,"name":"x"}', token: null, status: 401, challenge: 'Bearer realm="plantstore"' },
    { body: '{"id":1,"name":"x"}', token: generateToken(), status: 401, challenge: 'Bearer realm="plantstore", error="invalid_token"' },
    { body: '{"id":1,"name":"x"}', contentType: 'text/plain', status: 415 },
    { body: `{"id":4,"name":"${'x'.repeat(2000)}"}`, status: 413 },
  ];
  for (const { body, token, contentType, status, answer, challenge } of cases) {
    const response = await post(body, { ...(token === undefined ? {} : { token }), ...(contentType ? { contentType } : {}) });
    assert.equal(response.statusCode, status, body.slice(0, 40));
    if (status === 200) {
      assertMatches(responseSpec('/plants', 'post', status).content['application/json']!.schema, response.json(), '200');
      assert.equal(response.body, answer, body.slice(0, 40));
    } else assertDeclaredError(responseSpec('/plants', 'post', status), response.json(), body.slice(0, 40));
    assert.equal(response.headers['www-authenticate'], challenge, `${body.slice(0, 40)}: WWW-Authenticate`);
  }
});

/**
 * Asserts that an error body matches the Error schema (its `code` one of the
 * schema's) and that its code is one the document gives as an example of
 * this response: a 401 answers a 401's code, not a 503's.
 */
function assertDeclaredError(spec: { content: Record<string, { schema: unknown; examples?: Record<string, unknown> }> }, body: unknown, what: string): void {
  const media = spec.content['application/json']!;
  assertMatches(media.schema, body, what);
  const { code } = body as { code: string };
  assert.ok(Object.keys(media.examples ?? {}).includes(code), `${what}: ${code} is among ${Object.keys(media.examples ?? {}).join(', ')}`);
}

test('405 and 404 answers match the document', async (t) => {
  const { app } = await testApp(t);
  const notAllowed = await app.inject({ method: 'GET', url: '/plants' });
  assert.equal(notAllowed.statusCode, 405);
  assert.equal(notAllowed.headers['allow'], 'POST');
  assertDeclaredError(responseSpec('/plants', 'post', 405), notAllowed.json(), '405');
  const notFound = await app.inject({ method: 'GET', url: '/nothing' });
  assert.equal(notFound.statusCode, 404);
  assertDeclaredError(document.components.responses.NotFound, notFound.json(), '404');
});

test('the answers written outside the routes match the document: HTTP failures, an undecodable path, a stopping readiness', async (t) => {
  const { app, port } = await testApp(t, { requestTimeoutMs: 500, headersTimeoutMs: 500 });
  const at = await port();
  const raw = async (request: string, { stall = false } = {}) => {
    const connection = rawConnection(at);
    connection.socket.write(request);
    if (!stall) connection.socket.end();
    await connection.closed;
    const answers = splitAnswers(connection.received());
    assert.equal(answers.length, 1, connection.received());
    return { status: answers[0]!.status, headers: answers[0]!.headers, body: JSON.parse(answers[0]!.body) as unknown };
  };
  const cases: [string, string, { stall?: boolean }?][] = [
    ['malformed', 'NONSENSE\r\n\r\n'],
    ['headers too large', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['too slow', 'POST /plants HTTP/1.1\r\nHost: x\r\n', { stall: true }],
    ['undecodable path', 'GET /plants%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
  ];
  for (const [what, request, options] of cases) {
    const { status, body } = await raw(request, options);
    assertDeclaredError(responseSpec('/plants', 'post', status), body, what);
  }
  app.stopping = true;
  const stopping = await raw('GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.equal(stopping.status, 503);
  assertDeclaredError(responseSpec('/readyz', 'get', 503), stopping.body, 'readiness while stopping');
  assert.equal((stopping.body as { code: string }).code, 'STOPPING');
  assert.equal(stopping.headers['retry-after'], '1', 'as the document declares for a 503');
});

test('the answer of a 200 is exactly a Plant: no id, nothing extra', async (t) => {
  const { post } = await testApp(t);
  const response = await post('{"id":9,"name":"Fern","tag":"leafy","extra":1}');
  const strict = ajv.compile({ ...rebase(document.components.schemas.Plant), unevaluatedProperties: false });
  assert.ok(strict(response.json()), response.body);
});

/** Every operation of the document, with its path and method. */
function operations(): { name: string; operation: Record<string, any> }[] {
  return Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
  );
}

/** A response of an operation, its `$ref` followed. */
function resolved(response: Record<string, any>): Record<string, any> {
  return response['$ref'] ? document.components.responses[String(response['$ref']).split('/').at(-1)!] : response;
}

test('the document describes every operation, response, schema and field', () => {
  for (const { name, operation } of operations()) {
    assert.ok(operation.summary && operation.description, `${name} has a summary and a description`);
    for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
      assert.ok(resolved(response).description, `${name} ${status} is described`);
    }
  }
  const described = (schema: Record<string, any>, where: string): void => {
    for (const [field, property] of Object.entries((schema.properties ?? {}) as Record<string, any>)) {
      assert.ok(property.description, `${where}.${field} is described`);
    }
    for (const part of schema.allOf ?? []) described(part, where);
  };
  for (const [name, schema] of Object.entries(document.components.schemas as Record<string, any>)) {
    assert.ok(schema.description, `${name} is described`);
    described(schema, name);
  }
});

test('every status of every operation has an example body, valid against its schema', () => {
  for (const { name, operation } of operations()) {
    for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
      const [media] = Object.values(resolved(response).content as Record<string, any>);
      const examples = Object.entries((media.examples ?? {}) as Record<string, { value: unknown }>);
      assert.ok(examples.length > 0, `${name} ${status} has an example`);
      for (const [example, { value }] of examples) assertMatches(media.schema, value, `${name} ${status} ${example}`);
    }
  }
  for (const [example, { value }] of Object.entries(document.paths['/plants'].post.requestBody.content['application/json'].examples as Record<string, { value: unknown }>)) {
    assertMatches(document.components.schemas.NewPlant, value, `request example ${example}`);
  }
});

test('the request examples show an id beyond 2^53, written with every digit, and say that JavaScript must not read it as a number', () => {
  const json = readFileSync(new URL('../../openapi/plantstore.json', import.meta.url), 'utf8');
  assert.ok(json.includes('"id": 9007199254740993'), 'the JSON document keeps the digits');
  const example = document.paths['/plants'].post.requestBody.content['application/json'].examples['beyond-2-53'];
  assert.match(example.description, /JavaScript/);
  assert.match(document.info.description, /plantstore token create/, 'how to get a token');
});

test('the document declares the plantCreated webhook with the Standard Webhooks headers, and its examples are valid', () => {
  const webhook = document.webhooks.plantCreated.post;
  assert.ok(webhook.summary && webhook.description);
  assert.deepEqual(
    webhook.parameters.map((parameter: { name: string; in: string; required: boolean }) => [parameter.name, parameter.in, parameter.required]),
    [
      ['webhook-id', 'header', true],
      ['webhook-timestamp', 'header', true],
      ['webhook-signature', 'header', true],
    ],
  );
  const media = webhook.requestBody.content['application/json'];
  assert.equal(media.schema.$ref, '#/components/schemas/PlantCreatedEvent');
  for (const [name, { value }] of Object.entries(media.examples as Record<string, { value: unknown }>)) assertMatches(media.schema, value, name);
  assert.ok(!contractAjv.compile(rebase(media.schema))({ type: 'plant.deleted', timestamp: '2026-11-23T10:00:00.000Z', data: { id: 1, name: 'x' } }));
});

test('the document declares the webhookPing webhook beside plantCreated, with the same headers, and the ping the service sends matches it', () => {
  const ping = document.webhooks.webhookPing.post;
  assert.ok(ping.summary && /answer 2xx/.test(ping.description));
  assert.deepEqual(ping.parameters, document.webhooks.plantCreated.post.parameters, 'the same Standard Webhooks headers');
  const media = ping.requestBody.content['application/json'];
  assert.equal(media.schema.$ref, '#/components/schemas/WebhookPingEvent');
  for (const [name, { value }] of Object.entries(media.examples as Record<string, { value: unknown }>)) assertMatches(media.schema, value, name);
  const sent = JSON.parse(pingBody(new Date())) as { type: string };
  assertMatches(media.schema, sent, 'the body webhook ping sends');
  assert.equal(sent.type, WEBHOOK_PING);
  assert.ok(!contractAjv.compile(rebase(document.webhooks.plantCreated.post.requestBody.content['application/json'].schema))(sent), 'a ping is not a plantCreated');
});
