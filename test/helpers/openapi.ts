import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

/**
 * The OpenAPI document as the repository holds it. Read independently of the
 * server's own loader (src/http/contract.ts): the suites check the server against the file.
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
