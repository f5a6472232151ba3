import { createServer, type IncomingMessage, type Server, type ServerResponse, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { closesAfterAnswer } from './answer-before-body.js';

/** The settings of Fastify's that shape its node:http server (Fastify's own defaults filled in). */
export interface HttpServerSettings {
  http?: ServerOptions | null | undefined;
  keepAliveTimeout?: number | undefined;
  requestTimeout?: number | undefined;
  connectionTimeout?: number | undefined;
}

/**
 * Decides whether node:http serves a new connection. One it refuses is its
 * own to answer and close: node:http never reads from it.
 */
export type ConnectionGate = (socket: Socket) => boolean;

/**
 * The node:http server under the app, for Fastify's `serverFactory`: the
 * server Fastify would make itself (fastify/lib/server.js: the same options,
 * keep-alive, request and connection timeouts), with a request listener of
 * the app's own, so that the direct routes come before Fastify's, and so
 * that a connection closing after an early answer serves nothing more.
 * `gate`, when given, sees each connection before node:http does.
 */
export function httpServer(
  settings: HttpServerSettings,
  listener: (request: IncomingMessage, response: ServerResponse) => void,
  gate?: ConnectionGate,
): Server {
  const server = createServer(settings.http ?? {}, (request, response) => {
    // A request sent after one refused before its body is not served: that connection is closing (answer-before-body.ts).
    if (!closesAfterAnswer(request.socket)) listener(request, response);
  });
  if (settings.keepAliveTimeout !== undefined) server.keepAliveTimeout = settings.keepAliveTimeout;
  if (settings.requestTimeout !== undefined) server.requestTimeout = settings.requestTimeout;
  server.setTimeout(settings.connectionTimeout ?? 0);
  if (gate !== undefined) putGateBefore(server, gate);
  return server;
}

/**
 * node:http serves a connection from the one 'connection' listener its
 * server is made with; that listener is moved behind the gate, so that a
 * refused connection gets no parser, no timeouts and no request.
 */
function putGateBefore(server: Server, gate: ConnectionGate): void {
  const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
  if (listeners.length !== 1) throw new Error(`node:http made its server with ${listeners.length} connection listeners, not one`);
  const serve = listeners[0]!;
  server.removeListener('connection', serve);
  server.on('connection', (socket: Socket) => {
    if (gate(socket)) serve.call(server, socket);
  });
}
