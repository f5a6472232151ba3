import type { ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';

/**
 * The private fields of Node.js the service reads or writes, each where no
 * public API does the same. test/http/node-internals.test.ts fails, naming
 * the field, on a Node.js line where one has gone.
 */

/** node:net's own count of a server's connections: what maxConnections, close() and getConnections() read. */
interface NetAccounting {
  _connections: number;
}

/** Whether `server` keeps node:net's count that adoptConnection moves a connection between. */
export function countsConnections(server: Server): boolean {
  return typeof (server as Partial<NetAccounting>)._connections === 'number';
}

/** How many connections node:net counts for `server`, synchronously (getConnections() answers later). */
export function connectionCount(server: Server): number {
  return (server as Server & NetAccounting)._connections;
}

/**
 * Makes `socket`, accepted by `from`, one of `to`'s connections, as node:net's
 * own accept makes it (lib/net.js, onconnection): `to` counts it until it
 * closes, against its maxConnections and in close(). No public API hands a
 * connection over: emitting 'connection' serves it, uncounted.
 */
export function adoptConnection(from: Server, to: Server, socket: Socket): void {
  (from as Server & NetAccounting)._connections -= 1;
  (to as Server & NetAccounting)._connections += 1;
  // node:net lowers the count of socket._server when the socket closes.
  Object.assign(socket, { server: to, _server: to });
}

/**
 * The answer a connection is working on, or null between requests. node:http
 * sets it as it hands each request's answer to the connection, and its own
 * closeIdleConnections() reads it; no public API tells it.
 */
export function answerInFlight(socket: Socket): ServerResponse | null {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? null;
}
