import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../errors.js';

/**
 * The one place where errors become answers: every error, ours or Fastify's,
 * is turned into a catalogue entry and answered with the spec's Error body.
 * The detail of a 5xx goes to the log under the request id, never to the client.
 */
export function errorHandler(error: FastifyError | ServiceError, request: FastifyRequest, reply: FastifyReply): void {
  const answer = toServiceError(error);
  logErrorAnswer(request.log, error, answer);
  if (answer.code === 'BODY_TOO_LARGE') {
    // The rest of the body is not read; the connection cannot be reused.
    reply.header('connection', 'close');
  }
  void reply.code(answer.status).headers(answer.headers).send(answer.toBody());
}

/** What an operator needs of an error answer, under the request's id: the cause of a 5xx, the code of the rest. */
export function logErrorAnswer(log: Pick<FastifyBaseLogger, 'error' | 'info'>, error: unknown, answer: ServiceError): void {
  if (answer.status >= 500) {
    log.error({ err: error, code: answer.code }, answer.message);
  } else {
    log.info({ code: answer.code }, answer.message);
  }
}

/** A body that fails the NewPlant schema: 400, naming the first field at fault. */
export function invalidPlant(errors: readonly ValidationError[]): ServiceError {
  return new ServiceError('INVALID_PLANT', { detail: describeValidationError(errors[0]!) });
}

/** Any error as its catalogue entry: ours as they are, Fastify's own codes (fastify/lib/errors.js) mapped. */
export function toServiceError(error: FastifyError | ServiceError | Error): ServiceError {
  if (error instanceof ServiceError) return error;
  const { validation, code, statusCode } = error as Partial<FastifyError>;
  if (validation !== undefined && validation.length > 0) return invalidPlant(validation);
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ServiceError('UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ServiceError('BODY_TOO_LARGE', { detail: 'the limit is set by BODY_LIMIT' });
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
