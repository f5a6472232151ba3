import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { errorCatalogue, ServiceError } from '../src/errors.js';
import { openApiFile as document } from './helpers/openapi.js';

const apiPage = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');

test('every catalogue entry is a row of the error table in docs/api.md', () => {
  for (const [code, entry] of Object.entries(errorCatalogue)) {
    assert.ok(apiPage.includes(`| ${entry.status} | \`${code}\` |`), `error table row for ${code}`);
  }
});

test('every row of the error table in docs/api.md is a catalogue entry', () => {
  const rows = [...apiPage.matchAll(/^\| (\d{3}) \| `([A-Z_]+)` \|/gm)];
  assert.ok(rows.length > 0);
  for (const [, status, code] of rows) {
    const entry = errorCatalogue[code as keyof typeof errorCatalogue];
    assert.ok(entry, `${code} is in the catalogue`);
    assert.equal(entry.status, Number(status), code);
  }
});

test('every status of the catalogue is declared in the OpenAPI document with the Error schema', () => {
  const declared = new Map<number, unknown>();
  for (const operations of Object.values(document.paths) as Record<string, { responses: Record<string, { $ref?: string }> }>[]) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        declared.set(Number(status), response.$ref ? document.components.responses[response.$ref.split('/').at(-1)!] : response);
      }
    }
  }
  // An unknown path has no operation to declare it on; the document declares it as a shared response.
  declared.set(404, document.components.responses.NotFound);
  for (const [code, entry] of Object.entries(errorCatalogue)) {
    const response = declared.get(entry.status) as { content: Record<string, { schema: { $ref: string } }> } | undefined;
    assert.ok(response, `status ${entry.status} (${code}) is declared`);
    assert.equal(response.content['application/json']!.schema.$ref, '#/components/schemas/Error', code);
  }
});

test("the Error schema's codes are the catalogue's, in its order", () => {
  assert.deepEqual(document.components.schemas.Error.properties.code.enum, Object.keys(errorCatalogue));
});

test('every catalogue entry has an example in the OpenAPI document, under its code, with its status, message and code', () => {
  const examples = new Map<string, { error: number; message: string; code: string }>();
  for (const response of Object.values(document.components.responses) as { content: Record<string, { examples?: Record<string, { value: never }> }> }[]) {
    for (const [code, example] of Object.entries(response.content['application/json']?.examples ?? {})) examples.set(code, example.value);
  }
  for (const [code, entry] of Object.entries(errorCatalogue)) {
    const example = examples.get(code);
    assert.ok(example, `an example named ${code}`);
    assert.equal(example.error, entry.status, code);
    assert.equal(example.code, code);
    assert.ok(example.message === entry.message || example.message.startsWith(`${entry.message}: `), `${code}: ${example.message}`);
  }
});

test('an error body carries the status, the message with the detail after a colon, and the code', () => {
  const error = new ServiceError('PLANT_CONFLICT', { detail: 'id 7 is taken by another plant' });
  assert.deepEqual(error.toBody(), {
    error: 409,
    message: 'A plant with this id already exists with a different name or tag: id 7 is taken by another plant',
    code: 'PLANT_CONFLICT',
  });
  assert.deepEqual(new ServiceError('STORE_UNAVAILABLE').headers, { 'retry-after': '1' });
});
