import type { ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';

// Private Node.js fields, each where no public API serves; test/http/node-internals.test.ts names any that a Node.js line drops.

/** _connections: node:net's count behind maxConnections and close(); only getConnections() reads it publicly, and asynchronously. */
interface NetAccounting {
  _connections: number;
}

export function countsConnections(server: Server): boolean {
  return typeof (server as Partial<NetAccounting>)._connections === 'number';
}

export function connectionCount(server: Server): number {
  return (server as Server & NetAccounting)._connections;
}

/** As lib/net.js's onconnection does; no public API hands a connection over: emitting 'connection' serves it uncounted. */
export function adoptConnection(from: Server, to: Server, socket: Socket): void {
  (from as Server & NetAccounting)._connections -= 1;
  (to as Server & NetAccounting)._connections += 1;
  // _server: node:net lowers this server's count when the socket closes; no public API sets it.
  Object.assign(socket, { server: to, _server: to });
}

/** _httpMessage: the answer a connection is working on, null between requests; node:http's closeIdleConnections() reads it, no public API tells it. */
export function answerInFlight(socket: Socket): ServerResponse | null {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? null;
}
