import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

/**
 * The OpenAPI document as the repository holds it. Read independently of the
 * server's own loader (src/contract/openapi-document.ts): the suites check the server against the file.
 * Untyped (`any`), so that the suites can walk it freely.
 */
export const openApiFile = parse(readFileSync(new URL('../../openapi/plantstore.yaml', import.meta.url), 'utf8'));

/** An independent validator: Ajv with the document's components registered as `plantstore`. */
export const contractAjv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(contractAjv);
contractAjv.addSchema({ $id: 'plantstore', components: openApiFile.components }, 'plantstore');

/** Points the document's local refs (`#/components/...`) at the components registered in `contractAjv`. */
export function rebase(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"plantstore#/components/')) as Record<string, unknown>;
}

/** The response the document declares for this status of an operation, its `$ref` followed. */
export function responseSpec(path: string, method: string, status: number): { content: Record<string, { schema: unknown }> } {
  const responses = openApiFile.paths[path][method].responses;
  let spec = responses[String(status)];
  assert.ok(spec, `the document declares ${status} for ${method.toUpperCase()} ${path}`);
  if (spec.$ref) spec = openApiFile.components.responses[spec.$ref.split('/').at(-1)];
  return spec;
}

/** Asserts that a body matches a schema of the document. */
export function assertMatches(schema: unknown, body: unknown, what: string): void {
  const validate = contractAjv.compile(rebase(schema));
  assert.ok(validate(body), `${what}: ${JSON.stringify(body)} ${contractAjv.errorsText(validate.errors)}`);
}
