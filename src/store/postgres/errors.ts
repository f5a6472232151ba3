import { ServiceError } from '../../errors.js';

/** "The database cannot do this now": socket errors, classes 08 and 53, 57P and 25006 become STORE_UNAVAILABLE (503). */
const UNAVAILABLE_CODES = /^(08|53|57P|25006$|ECONNREFUSED$|ECONNRESET$|ETIMEDOUT$|EPIPE$|ENOTFOUND$|EHOSTUNREACH$|EAI_AGAIN$)/;
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|Query read timeout/;

/** The server is gone or takes no more writes: a socket error, a shutdown (57P01-57P03), class 08, or 25006 (a standby). */
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
