import { createServer, type IncomingMessage, type Server, type ServerResponse, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { closesAfterAnswer } from './answer-before-body.js';

/** Fastify's settings that shape its node:http server, its defaults filled in. */
export interface HttpServerSettings {
  http?: ServerOptions | null | undefined;
  keepAliveTimeout?: number | undefined;
  requestTimeout?: number | undefined;
  connectionTimeout?: number | undefined;
}

/** A connection the gate refuses is its own to answer and close: node:http never reads from it. */
export type ConnectionGate = (socket: Socket) => boolean;

/** The server Fastify would make (fastify/lib/server.js), with the app's own listener so that direct routes come first. */
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

/** node:http serves from its one 'connection' listener: moved behind the gate, a refused connection gets no parser or timeouts. */
function putGateBefore(server: Server, gate: ConnectionGate): void {
  const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
  if (listeners.length !== 1) throw new Error(`node:http made its server with ${listeners.length} connection listeners, not one`);
  const serve = listeners[0]!;
  server.removeListener('connection', serve);
  server.on('connection', (socket: Socket) => {
    if (gate(socket)) serve.call(server, socket);
  });
}
