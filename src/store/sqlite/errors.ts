import { ServiceError } from '../../errors.js';

/** SQLite's codes for "the database cannot do this now": they become STORE_UNAVAILABLE (503), and the process lives on. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOTADB|CORRUPT|PROTOCOL)/;

function isUnavailable(error: { code?: unknown; message?: unknown }): boolean {
  return (
    (typeof error.code === 'string' && UNAVAILABLE.test(error.code)) ||
    (typeof error.message === 'string' && /database connection is not open/.test(error.message))
  );
}

export function translateErrors<T>(operation: () => T): T {
  try {
    return operation();
  } catch (error) {
    throw translateError(error);
  }
}

/** The domain's error for a driver's error: STORE_UNAVAILABLE, or the error itself. */
function translateError(error: unknown): unknown {
  return error instanceof Error && isUnavailable(error) ? new ServiceError('STORE_UNAVAILABLE', { cause: error }) : error;
}
