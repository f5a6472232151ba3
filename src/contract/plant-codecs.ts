import AjvCompiler from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { components } from './generated/openapi.js';
import type { ErrorBody } from '../errors.js';
import { componentSchema, exactInt64Schema } from './openapi-document.js';
import { addInt64Keyword } from './int64-keyword.js';

/**
 * POST /plants' body check and answer writers, compiled once from the contract with Fastify's own compilers. Fastify's
 * route and the direct route both use them, so the two cannot disagree on what is valid or how an answer is written.
 */

const ROUTE = { method: 'POST', url: '/plants' } as const;

/** The body schema: NewPlant, with its int64 id checked exactly (see int64-keyword.ts). */
export const newPlantSchema = exactInt64Schema(componentSchema('NewPlant'));

const compileValidator = AjvCompiler()(
  {},
  {
    // Validate exactly what was sent: no coercion (`"1"` is not an id), no defaults, nothing removed.
    customOptions: { coerceTypes: false, useDefaults: false, removeAdditional: false },
    plugins: [addInt64Keyword],
  },
);

/** Checks a parsed body against NewPlant; on failure its `errors` hold Ajv's first error. */
export const validateNewPlant = compileValidator({ schema: newPlantSchema, ...ROUTE, httpPart: 'body' });

const compileSerializer = SerializerSelector()({}, {});

export const serializePlant = compileSerializer({ schema: componentSchema('Plant'), ...ROUTE, httpStatus: '200' }) as (plant: components['schemas']['Plant']) => string;

export const serializeError = compileSerializer({ schema: componentSchema('Error'), ...ROUTE, httpStatus: '4xx' }) as (error: ErrorBody) => string;
