import type { FastifyInstance } from 'fastify';
import type { RecordCompletion } from '../../observability/request-completed.js';
import { SECURITY_HEADERS } from '../answer-headers.js';

/** Name each hook's function: a test compares them with GLOBAL_HOOKS_APPLIED (../fast-path/plants-fast-path.ts). */
export function addGlobalHooks(app: FastifyInstance, record: RecordCompletion): void {
  app.addHook('onRequest', function answerHeaders(request, reply, done) {
    reply.headers(SECURITY_HEADERS);
    reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('onResponse', function recordCompletion(request, reply, done) {
    record(request, request.routeOptions.url ?? 'unknown', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
