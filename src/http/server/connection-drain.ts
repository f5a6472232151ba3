import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { answerInFlight } from './node-internals.js';

/** What a stopping server does with its open connections. */
export interface ConnectionDrain {
  /**
   * From now on every answer carries `Connection: close` and its connection
   * closes once it is sent, the answers still being worked on included, and
   * the connections that wait idle between requests close at once. So a
   * stop takes as long as its slowest request in flight, not as long as the
   * clients' keep-alive.
   */
  closeAfterEachAnswer(): void;
}

/**
 * Follows the server's connections, not its requests: this costs nothing per
 * request, and a keep-alive client makes one connection for many.
 */
export function connectionDrain(server: Server): ConnectionDrain {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    closeAfterEachAnswer() {
      server.on('request', (_request, response: ServerResponse) => closeAfterAnswer(response));
      for (const socket of sockets) {
        const inFlight = answerInFlight(socket);
        if (inFlight) closeAfterAnswer(inFlight);
      }
      server.closeIdleConnections();
    },
  };
}

/** node:http closes a connection after an answer that says `Connection: close` (RFC 9112, section 9.6). */
function closeAfterAnswer(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('connection', 'close');
}
