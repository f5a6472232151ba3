import type { components } from './contract/generated/openapi.js';

/**
 * The error catalogue: every error the service answers. An entry has a stable `code` (for programs, and logged),
 * its HTTP status and the message a person reads, to which a detail (which field, which id) is appended after a
 * colon. Headers that always go with it (the RFC 6750 challenge, Retry-After) and a log level other than info sit
 * in the entry too, so that no route has to remember them. A test keeps the catalogue, the OpenAPI document (an
 * example body under each code) and docs/api.md's error table in step.
 */
export const errorCatalogue = {
  MISSING_CREDENTIALS: {
    status: 401,
    message: 'Authentication required: send the header "Authorization: Bearer <token>"',
    // RFC 6750, section 3: no error attribute when the request had no credentials.
    headers: { 'www-authenticate': 'Bearer realm="plantstore"' },
  },
  INVALID_TOKEN: {
    status: 401,
    message: 'The bearer token is unknown, revoked or expired',
    headers: { 'www-authenticate': 'Bearer realm="plantstore", error="invalid_token"' },
  },
  INSUFFICIENT_SCOPE: {
    status: 403,
    message: 'The bearer token is valid but does not grant the scope this request needs',
    // RFC 6750, section 3.1; the answer adds `scope="..."`, the configured scope, to this challenge.
    headers: { 'www-authenticate': 'Bearer realm="plantstore", error="insufficient_scope"' },
  },
  IDP_UNAVAILABLE: {
    status: 503,
    message: "The identity provider's keys cannot be fetched to check this token; retry after the time in Retry-After",
    // The provider's keeper acts on it, told by the warning of the failed fetch (tokens/jwt/key-set.ts).
    log: 'warn',
  },
  TOO_MANY_AUTH_FAILURES: {
    status: 429,
    message: 'Too many failed authentications from this address; retry after the time in Retry-After',
  },
  RATE_LIMITED: {
    status: 429,
    message: "This client has used its quota of creates; retry after the time in Retry-After",
    // Retry-After and the RateLimit fields are the answer's own (rate-limits/rate-limiter.ts).
  },
  TOO_MANY_CONNECTIONS: {
    status: 429,
    // Written as a connection opens, before any request is read; the server then closes it (connections-per-address.ts).
    message: 'Too many connections are open from this address; reuse one, or close one before opening another',
    headers: { 'retry-after': '1' },
  },
  NOT_FOUND: {
    status: 404,
    message: 'No such path',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    message: 'Method not allowed',
  },
  PLANT_CONFLICT: {
    status: 409,
    message: 'A plant with this id already exists with a different name or tag',
  },
  BODY_TOO_LARGE: {
    status: 413,
    message: 'The request body is too large',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'Unsupported media type: send the body as "Content-Type: application/json" in UTF-8',
  },
  INVALID_JSON: {
    status: 400,
    message: 'The request body is not valid JSON',
  },
  INVALID_PLANT: {
    status: 400,
    message: 'Invalid plant',
  },
  BAD_REQUEST: {
    status: 400,
    message: 'Bad request',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    message: 'The request was not received in time',
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    message: 'The request headers are too large',
  },
  STORE_UNAVAILABLE: {
    status: 503,
    message: 'The store cannot take writes right now; retry later',
    headers: { 'retry-after': '1' },
    // The database is away, full or read-only: someone must see to it. The line has its cause.
    log: 'error',
  },
  OVERLOADED: {
    status: 503,
    message: 'The server has more writes waiting than it accepts; retry later',
    headers: { 'retry-after': '1' },
    // Load shed by design and retried by clients; a capacity matter, not a fault.
    log: 'warn',
  },
  STOPPING: {
    status: 503,
    message: 'The server is stopping; send to another instance',
    headers: { 'retry-after': '1' },
    // Every graceful stop answers it to readiness polls: nothing to act on.
  },
  INTERNAL: {
    status: 500,
    message: 'Internal server error; the server log has the detail under this request id',
    // A bug: the line has the error and its stack.
    log: 'error',
  },
} as const satisfies Record<string, CatalogueEntry>;

export interface CatalogueEntry {
  readonly status: number;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** The level its answers are logged at, info unless given; error is for what someone must act on, its line holding the cause and stack the answer never shows. */
  readonly log?: 'error' | 'warn';
}

export type ErrorCode = keyof typeof errorCatalogue;

/** The body of every error answer: the contract's Error schema. */
export type ErrorBody = components['schemas']['Error'];

/** An error the service answers on purpose, with a catalogue entry. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, options: { detail?: string; headers?: Record<string, string>; cause?: unknown } = {}) {
    const entry: CatalogueEntry = errorCatalogue[code];
    super(options.detail === undefined ? entry.message : `${entry.message}: ${options.detail}`, { cause: options.cause });
    this.name = 'ServiceError';
    this.code = code;
    this.status = entry.status;
    this.headers = { ...entry.headers, ...options.headers };
  }

  toBody(): ErrorBody {
    return { error: this.status, message: this.message, code: this.code };
  }
}
