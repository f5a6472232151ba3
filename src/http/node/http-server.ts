import { createServer, type IncomingMessage, type Server, type ServerResponse, type ServerOptions } from 'node:http';
import { closesAfterAnswer } from './answer-before-body.js';

/** The settings of Fastify's that shape its node:http server (Fastify's own defaults filled in). */
export interface HttpServerSettings {
  http?: ServerOptions | null | undefined;
  keepAliveTimeout?: number | undefined;
  requestTimeout?: number | undefined;
  connectionTimeout?: number | undefined;
}

/**
 * The node:http server under the app, for Fastify's `serverFactory`: the
 * server Fastify would make itself (fastify/lib/server.js: the same options,
 * keep-alive, request and connection timeouts), with a request listener of
 * the app's own, so that the direct routes come before Fastify's, and so
 * that a connection closing after an early answer serves nothing more.
 */
export function httpServer(settings: HttpServerSettings, listener: (request: IncomingMessage, response: ServerResponse) => void): Server {
  const server = createServer(settings.http ?? {}, (request, response) => {
    // A request sent after one refused before its body is not served: that connection is closing (answer-before-body.ts).
    if (!closesAfterAnswer(request.socket)) listener(request, response);
  });
  if (settings.keepAliveTimeout !== undefined) server.keepAliveTimeout = settings.keepAliveTimeout;
  if (settings.requestTimeout !== undefined) server.requestTimeout = settings.requestTimeout;
  server.setTimeout(settings.connectionTimeout ?? 0);
  return server;
}
