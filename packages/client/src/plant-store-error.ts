import type { components } from './generated/openapi.js';
import { retryAfterSeconds } from './retry-after.js';

/** The body of every error answer of the service: its `error` is the HTTP status, its `code` names the error. */
export type ErrorBody = components['schemas']['Error'];

/**
 * What a `PlantStoreError` is, for a program to act on: the service's code
 * from the answer's body (`OVERLOADED`, `PLANT_CONFLICT`, ...), or one of the
 * client's own when the service's body is not there to say:
 *
 * - `NETWORK_ERROR`: no answer came (connection refused or reset, name not
 *   resolved, TLS failed); `status` is undefined.
 * - `TIMEOUT`: no whole answer within `timeoutMs`; `status` is undefined.
 * - `UNEXPECTED_ANSWER`: an error answer without a code (a proxy or load
 *   balancer answered, or a server older than codes); `status` is its
 *   status.
 *
 * A later service may send codes this version does not list.
 */
export type PlantStoreErrorCode = ErrorBody['code'] | 'NETWORK_ERROR' | 'TIMEOUT' | 'UNEXPECTED_ANSWER' | (string & {});

/**
 * Every failure of a call, but a wrong argument and a cancel: an error answer
 * of the plant store (any status other than 200), or no answer at all.
 * `code` says which (see PlantStoreErrorCode); `status` is the HTTP status,
 * undefined when nothing answered; `error` and `message` come from the
 * answer's Error body (from the status and its text when the service's body
 * is not there); `retryAfter` is the answer's `Retry-After` in seconds,
 * undefined when it sent none or one that is neither delta-seconds nor an
 * HTTP-date; `cause` is what `fetch` threw, for a failure without an answer.
 *
 * A 429 (`RATE_LIMITED`, `TOO_MANY_AUTH_FAILURES`) is never retried by the
 * client: whether to wait `retryAfter` and send again is the caller's call.
 */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError';
  readonly code: PlantStoreErrorCode;
  readonly status: number | undefined;
  readonly error: number | undefined;
  /** Seconds to wait before trying again, from the answer's `Retry-After`; undefined when it had no valid one. */
  readonly retryAfter: number | undefined;

  constructor(init: {
    code: PlantStoreErrorCode;
    message: string;
    status?: number | undefined;
    error?: number | undefined;
    retryAfter?: number | undefined;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.error = init.error;
    this.retryAfter = init.retryAfter;
  }

  /** The error an answer carries, from its status, its `Retry-After` and its body's text. */
  static fromAnswer(status: number, statusText: string, retryAfterHeader: string | null, text: string): PlantStoreError {
    const body = errorBody(text);
    return new PlantStoreError({
      code: body?.code ?? 'UNEXPECTED_ANSWER',
      message: body?.message ?? `${status} ${statusText}`.trim(),
      status,
      error: body?.error ?? status,
      retryAfter: retryAfterSeconds(retryAfterHeader),
    });
  }

  /** The error of an attempt without an answer: `TIMEOUT` when its time ran out (`timeoutMs` given), else `NETWORK_ERROR`. */
  static noAnswer(url: string, cause: unknown, timeoutMs?: number): PlantStoreError {
    if (timeoutMs !== undefined) return new PlantStoreError({ code: 'TIMEOUT', message: `No answer from ${url} within ${timeoutMs} ms`, cause });
    return new PlantStoreError({ code: 'NETWORK_ERROR', message: `No answer from ${url}: ${innermostMessage(cause)}`, cause });
  }
}

/** The service's Error body (its code missing when the server is older than codes), or undefined for any other body. */
function errorBody(text: string): (Omit<ErrorBody, 'code'> & { code?: string }) | undefined {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body !== 'object' || body === null) return undefined;
    const { error, message, code } = body as Record<string, unknown>;
    if (typeof error !== 'number' || typeof message !== 'string') return undefined;
    return typeof code === 'string' ? { error, message, code } : { error, message };
  } catch {
    // Not JSON: a proxy or load balancer answered.
    return undefined;
  }
}

/** What went wrong at the bottom: `fetch failed` says nothing, its cause (`connect ECONNREFUSED ...`) does. */
function innermostMessage(error: unknown): string {
  let inner = error;
  while (inner instanceof Error && inner.cause instanceof Error) inner = inner.cause;
  return inner instanceof Error ? inner.message : String(inner);
}
