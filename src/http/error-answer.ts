import { serializeError } from '../contract/plant-codecs.js';
import { type CatalogueEntry, type ErrorCode, errorCatalogue, ServiceError } from '../errors.js';

/** What an answer's writer needs of a request's logger: Fastify's `request.log` and pino's loggers fit. */
export interface RequestLog {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** An error answer, ready for an adapter to write: its status, its Error body as JSON, and its own headers. */
export interface ErrorAnswer {
  readonly code: ServiceError['code'];
  readonly status: number;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The one place where errors become answers: every error, ours or the
 * framework's, becomes a catalogue entry, answered with the spec's Error
 * body, and logged at the entry's level. The detail of an error-level
 * answer (a bug, a store away) goes to the log under the request id, never
 * to the client.
 */
export function errorAnswer(error: unknown, log: RequestLog): ErrorAnswer {
  const answer = toServiceError(error as Error);
  const level = (errorCatalogue[answer.code] as CatalogueEntry).log;
  if (level === 'error') log.error({ err: error, code: answer.code }, answer.message);
  else if (level === 'warn') log.warn({ code: answer.code }, answer.message);
  else log.info({ code: answer.code }, answer.message);
  return { code: answer.code, status: answer.status, body: errorJson(answer), headers: answer.headers };
}

/** Each entry's body with its bare message, written once: most errors carry no detail. */
const BARE_BODIES = new Map<ErrorCode, string>(
  (Object.keys(errorCatalogue) as ErrorCode[]).map((code) => [code, serializeError(new ServiceError(code).toBody())]),
);

/** An error's body as JSON: the Error schema's `error`, `message` and `code`. */
export function errorJson(error: ServiceError): string {
  return error.message === errorCatalogue[error.code].message ? BARE_BODIES.get(error.code)! : serializeError(error.toBody());
}

/** A body that fails the NewPlant schema: 400, naming the first field at fault. */
export function invalidPlant(errors: readonly ValidationError[]): ServiceError {
  return new ServiceError('INVALID_PLANT', { detail: describeValidationError(errors[0]!) });
}

/** The fields of Fastify's errors that say which they are (fastify/lib/errors.js). */
interface FrameworkError extends Error {
  code?: string;
  statusCode?: number;
  validation?: readonly ValidationError[];
}

/** A body over BODY_LIMIT: 413, naming the limit in bytes. */
export function bodyTooLarge(bodyLimit: number): ServiceError {
  return new ServiceError('BODY_TOO_LARGE', { detail: `the limit is ${bodyLimit} bytes` });
}

/**
 * Any error as its catalogue entry: ours as they are, Fastify's own codes
 * mapped. (Fastify's 413 is mapped by its error handler, which knows the
 * limit: fastify/error-handler.ts.)
 */
export function toServiceError(error: Error): ServiceError {
  if (error instanceof ServiceError) return error;
  const { validation, code, statusCode } = error as FrameworkError;
  if (validation !== undefined && validation.length > 0) return invalidPlant(validation);
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ServiceError('UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ServiceError('BAD_REQUEST', { detail: 'the body length does not match Content-Length' });
  }
  if (error instanceof SyntaxError || error instanceof RangeError) {
    return new ServiceError('INVALID_JSON', { detail: error.message });
  }
  if (statusCode === 400) return new ServiceError('BAD_REQUEST', { detail: error.message });
  return new ServiceError('INTERNAL', { cause: error });
}

interface ValidationError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string | undefined;
}

/** One Ajv error as a sentence that names the field: "name must be a string". */
function describeValidationError(error: ValidationError): string {
  const field = error.instancePath === '' ? 'the body' : error.instancePath.slice(1).replaceAll('/', '.');
  switch (error.keyword) {
    case 'required':
      return `${String(error.params['missingProperty'])} is required`;
    case 'type': {
      const type = String(error.params['type']);
      const noun = type === 'object' ? 'JSON object' : type;
      return `${field} must be ${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;
    }
    default:
      return `${field} ${error.message ?? 'is invalid'}`;
  }
}
