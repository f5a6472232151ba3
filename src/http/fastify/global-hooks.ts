import type { FastifyInstance } from 'fastify';
import type { RecordCompletion } from '../../observability/request-completed.js';
import { SECURITY_HEADERS } from '../answer-headers.js';

/**
 * The hooks that every request Fastify serves runs. The node:http fast
 * path does the same work itself and lists these hooks by name
 * (GLOBAL_HOOKS_APPLIED in ../fast-path/plants-fast-path.ts); a test keeps the app's
 * hooks and that list equal, so name each hook's function.
 */
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
