import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../errors.js';

/**
 * A preParsing hook: the body must be `application/json`, and if a charset is
 * named it must be UTF-8 (RFC 8259, section 8.1). Checked before the body is
 * read, after authentication.
 */
export async function requireJsonMediaType(request: FastifyRequest): Promise<void> {
  const header = request.headers['content-type'];
  if (header === undefined) {
    throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', { detail: 'the request has no Content-Type' });
  }
  const [type = '', ...parameters] = header.split(';');
  if (type.trim().toLowerCase() !== 'application/json') {
    throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', { detail: `got ${JSON.stringify(type.trim())}` });
  }
  for (const parameter of parameters) {
    const [name = '', value = ''] = parameter.split('=', 2);
    const charset = value.trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    if (name.trim().toLowerCase() === 'charset' && charset !== 'utf-8' && charset !== 'utf8') {
      throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', { detail: `charset ${JSON.stringify(charset)} is not UTF-8` });
    }
  }
}
