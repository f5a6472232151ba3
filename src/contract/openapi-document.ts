import { readFileSync } from 'node:fs';
import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';

/**
 * The OpenAPI document, read once at start: routes take their schemas from it, so the served contract and the
 * validation cannot drift apart. openapi/plantstore.yaml is the source; `npm run openapi:generate` makes this JSON form.
 */
const documentText = readFileSync(new URL('../../openapi/plantstore.json', import.meta.url), 'utf8');
export const openApiDocument = JSON.parse(documentText) as OpenApiDocument;

/** The document as GET /openapi.json serves it: compact, with every digit of its example ids (`JSON.parse` rounds past 2^53). */
export const openApiJson: string = stringifyLossless(parseLossless(documentText))!;

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; license: { name: string } };
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, JsonSchema>; responses: Record<string, unknown> };
  [key: string]: unknown;
}

export type JsonSchema = { [keyword: string]: unknown };

const LOCAL_REF = '#/components/schemas/';

/** A component schema with every local `$ref` replaced by the schema it names. */
export function componentSchema(name: string): JsonSchema {
  const schema = openApiDocument.components.schemas[name];
  if (schema === undefined) throw new Error(`the OpenAPI document has no schema ${name}`);
  return inlineRefs(schema) as JsonSchema;
}

function inlineRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(inlineRefs);
  if (node === null || typeof node !== 'object') return node;
  const ref = (node as JsonSchema)['$ref'];
  if (typeof ref === 'string' && ref.startsWith(LOCAL_REF)) return componentSchema(ref.slice(LOCAL_REF.length));
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, inlineRefs(value)]));
}

/** The schema for a body `parseExactJson` read, integers as bigints: each `format: int64` integer becomes the exact `int64` keyword (int64-keyword.ts). */
export function exactInt64Schema(schema: JsonSchema): JsonSchema {
  return rewrite(schema) as JsonSchema;

  function rewrite(node: unknown): unknown {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node === null || typeof node !== 'object') return node;
    const { type, format, ...rest } = node as JsonSchema;
    if (type === 'integer' && format === 'int64') return { ...rest, int64: true };
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, rewrite(value)]));
  }
}
