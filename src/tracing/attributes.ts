// OpenTelemetry semantic conventions (opentelemetry.io/docs/specs/semconv, stable), written out: the conventions package ships thousands of names.

export const HTTP_REQUEST_METHOD = 'http.request.method';
export const HTTP_ROUTE = 'http.route';
export const HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const URL_SCHEME = 'url.scheme';
export const URL_FULL = 'url.full';
export const SERVER_ADDRESS = 'server.address';
export const SERVER_PORT = 'server.port';
export const CLIENT_ADDRESS = 'client.address';
/** The catalogue's code of an error answer (INVALID_TOKEN), or an attempt's failure. */
export const ERROR_TYPE = 'error.type';
export const DB_SYSTEM_NAME = 'db.system.name';
export const DB_OPERATION_NAME = 'db.operation.name';
export const DB_COLLECTION_NAME = 'db.collection.name';
export const DB_OPERATION_BATCH_SIZE = 'db.operation.batch.size';
export const HTTP_REQUEST_RESEND_COUNT = 'http.request.resend_count';

/** This service's own: the attempt's number, from 1, and the message's `webhook-id`. */
export const WEBHOOK_ATTEMPT = 'plantstore.webhook.attempt';
export const WEBHOOK_ID = 'plantstore.webhook.id';
