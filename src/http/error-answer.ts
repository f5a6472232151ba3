import { serializeError } from '../contract/plant-codecs.js';
import { type CatalogueEntry, type ErrorCode, errorCatalogue, ServiceError } from '../errors.js';

/** Fastify's `request.log` and pino's loggers fit. */
export interface RequestLog {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export interface ErrorAnswer {
  readonly code: ServiceError['code'];
  readonly status: number;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** The one place errors become answers; an error-level detail goes to the log under the request id, never to the client. */
export function errorAnswer(error: unknown, log: RequestLog): ErrorAnswer {
  const answer = toServiceError(error as Error);
  const level = (errorCatalogue[answer.code] as CatalogueEntry).log;
  if (level === 'error') log.error({ err: error, code: answer.code }, answer.message);
  else if (level === 'warn') log.warn({ code: answer.code }, answer.message);
  else log.info({ code: answer.code }, answer.message);
  return { code: answer.code, status: answer.status, body: errorJson(answer), headers: answer.headers };
}

/** Written once: most errors carry no detail. */
const BARE_BODIES = new Map<ErrorCode, string>(
  (Object.keys(errorCatalogue) as ErrorCode[]).map((code) => [code, serializeError(new ServiceError(code).toBody())]),
);

export function errorJson(error: ServiceError): string {
  return error.message === errorCatalogue[error.code].message ? BARE_BODIES.get(error.code)! : serializeError(error.toBody());
}

export function invalidPlant(errors: readonly ValidationError[]): ServiceError {
  return new ServiceError('INVALID_PLANT', { detail: describeValidationError(errors[0]!) });
}

/** As fastify/lib/errors.js sets them. */
interface FrameworkError extends Error {
  code?: string;
  statusCode?: number;
  validation?: readonly ValidationError[];
}

export function bodyTooLarge(bodyLimit: number): ServiceError {
  return new ServiceError('BODY_TOO_LARGE', { detail: `the limit is ${bodyLimit} bytes` });
}

/** Fastify's 413 is mapped by fastify/error-handler.ts, which knows the limit. */
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
