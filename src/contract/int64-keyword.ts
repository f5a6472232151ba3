// Ajv comes with @fastify/ajv-compiler, which calls this plugin with its own instance (plant-codecs.ts).
import type { Ajv } from 'ajv';

/** The contract's `format: int64`: a signed 64-bit integer. */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
}

/** The Ajv keyword `int64`, checked exactly on the bigints `parseExactJson` yields: a double cannot tell 2^63 from 2^63 - 1. */
export function addInt64Keyword(ajv: Ajv): Ajv {
  ajv.addKeyword({
    keyword: 'int64',
    schemaType: 'boolean',
    validate: (_schema: boolean, data: unknown) => isInt64(data),
    error: { message: `must be an integer from ${INT64_MIN} to ${INT64_MAX}` },
    errors: false,
  });
  return ajv;
}

