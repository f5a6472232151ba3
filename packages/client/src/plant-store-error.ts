import type { components } from './generated/openapi.js';

/** The body of every error answer of the service: its `error` is the HTTP status. */
export type ErrorBody = components['schemas']['Error'];

/**
 * An error answer of the plant store: every status other than 200 rejects
 * with one. `status` is the HTTP status; `error` and `message` come from the
 * answer's Error body (from the status and its text when a proxy answered
 * instead); `retryAfter` is the answer's `Retry-After` in seconds, when sent.
 */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError';
  readonly status: number;
  readonly error: number;
  readonly retryAfter: number | undefined;

  constructor(status: number, body: ErrorBody, retryAfter?: number) {
    super(body.message);
    this.status = status;
    this.error = body.error;
    this.retryAfter = retryAfter;
  }

  /** The error an answer carries, from its status, its `Retry-After` and its body's text. */
  static fromAnswer(status: number, statusText: string, retryAfterHeader: string | null, text: string): PlantStoreError {
    return new PlantStoreError(status, errorBody(status, statusText, text), parseRetryAfter(retryAfterHeader));
  }
}

function errorBody(status: number, statusText: string, text: string): ErrorBody {
  try {
    const body: unknown = JSON.parse(text);
    if (isErrorBody(body)) return body;
  } catch {
    // Not the service's JSON: a proxy or load balancer answered.
  }
  return { error: status, message: `${status} ${statusText}`.trim() };
}

function isErrorBody(body: unknown): body is ErrorBody {
  return (
    typeof body === 'object' &&
    body !== null &&
    typeof (body as Record<string, unknown>)['error'] === 'number' &&
    typeof (body as Record<string, unknown>)['message'] === 'string'
  );
}

/** `Retry-After` in seconds: a number of seconds, or an HTTP date (RFC 9110, section 10.2.3). */
function parseRetryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
