import { ServiceError } from '../../errors.js';

/**
 * What "the database cannot do this now" looks like from node-postgres: a
 * socket error, a connection timeout or cut, or a server-side code of class
 * 08 (connection), 53 (insufficient resources), 57P (shutting down, cannot
 * connect now) or 25006 (read-only). They become STORE_UNAVAILABLE (503).
 */
const UNAVAILABLE_CODES = /^(08|53|57P|25006$|ECONNREFUSED$|ECONNRESET$|ETIMEDOUT$|EPIPE$|ENOTFOUND$|EHOSTUNREACH$|EAI_AGAIN$)/;
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|Query read timeout/;

/**
 * What shows that a connection's server is gone or no longer takes writes:
 * a socket error, a connection cut or timed out, a statement with no answer
 * in time, a shutdown (57P01 admin, 57P02 crash, 57P03 cannot connect now),
 * a connection failure (class 08), or a write refused as read-only (25006:
 * the server is a standby now).
 */
const LOST_CODES = /^(08|57P0[123]$|25006$|ECONNREFUSED$|ECONNRESET$|ETIMEDOUT$|EPIPE$|EHOSTUNREACH$)/;
const LOST_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout/;

export function lostServer(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (typeof code === 'string' && LOST_CODES.test(code)) || (typeof message === 'string' && LOST_MESSAGES.test(message));
}

export async function translateErrors<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    const { code, message } = error as { code?: unknown; message?: unknown };
    if ((typeof code === 'string' && UNAVAILABLE_CODES.test(code)) || (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message))) {
      throw new ServiceError('STORE_UNAVAILABLE', { cause: error });
    }
    throw error;
  }
}
