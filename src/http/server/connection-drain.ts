import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { answerInFlight } from './node-internals.js';

export interface ConnectionDrain {
  /** Every answer from here on, in flight included, closes its connection and idle ones close at once: a stop lasts as long as its slowest request. */
  closeAfterEachAnswer(): void;
}

/** Follows connections, not requests: nothing is done per request. */
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
