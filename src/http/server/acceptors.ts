import type { Server } from 'node:http';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { adoptConnection, connectionCount, countsConnections } from './node-internals.js';

/**
 * Listening sockets on the server's address, the server's own included. The
 * kernel hands each new connection to one of them (by the connection's
 * addresses), and each event-loop turn accepts one connection on each.
 */
export const ACCEPTING_SOCKETS = 8;

/**
 * Resolves once `host`:`port` could be bound without SO_REUSEPORT, and frees
 * it again; rejects with the bind's error (EADDRINUSE when another server
 * listens there). Sockets bound with `reusePort` share the port with any
 * other process of the same user that binds it so: a server started twice on
 * one port would share its connections rather than fail. Checked first, the
 * port stays one server's, whichever of the two starts first.
 */
export async function checkAddressFree(host: string, port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port }, resolve);
  });
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * Binds the address `server` listens on (itself bound with `reusePort`)
 * ACCEPTING_SOCKETS - 1 more times, each connection they accept served by
 * `server` as one of its own.
 *
 * Why: libuv accepts one connection per event-loop turn (since libuv 1.45,
 * libuv/libuv#3696), and a turn of a saturated service lasts a batch of
 * creates. Clients that connect at once, a restarted fleet's or a load
 * balancer's, were accepted one a turn: the 64th after 64 turns, half a
 * second on a busy 2-core machine, while the others were served
 * (docs/performance.md). Eight sockets take eight a turn.
 *
 * A connection is handed over as node:net's own accept hands one to its
 * server: past MAX_CONNECTIONS (`maxConnections`) it is closed at once and
 * `drop` emitted; otherwise it counts among the server's connections, so
 * close() waits for it too. Closing the server closes the other sockets
 * Resolves the other sockets, for close() to close them when the server
 * stops listening, so that no connection is accepted after that.
 */
export async function acceptOnMoreSockets(server: Server): Promise<{ close(): void }> {
  const address = server.address();
  if (address === null || typeof address === 'string' || !countsConnections(server)) return { close: () => undefined };
  const bound = await Promise.allSettled(Array.from({ length: ACCEPTING_SOCKETS - 1 }, () => listenBeside(server, address.address, address.port)));
  const acceptors = bound.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = bound.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    for (const acceptor of acceptors) acceptor.close();
    throw failed.reason;
  }
  return {
    close: () => {
      for (const acceptor of acceptors) acceptor.close();
    },
  };
}

function listenBeside(server: Server, host: string, port: number): Promise<NetServer> {
  // node:http's servers set TCP_NODELAY on what they accept; these do the same.
  const acceptor = createServer({ noDelay: true }, (socket) => handOver(acceptor, server, socket));
  return new Promise((resolve, reject) => {
    acceptor.once('error', reject);
    acceptor.listen({ host, port, reusePort: true }, () => {
      acceptor.off('error', reject);
      resolve(acceptor);
    });
  });
}

/** As node:net's onconnection (lib/net.js) does for a connection its server accepted itself. */
function handOver(acceptor: NetServer, server: Server, socket: Socket): void {
  if (server.maxConnections !== undefined && server.maxConnections !== null && connectionCount(server) >= server.maxConnections) {
    const { localAddress, localPort, localFamily, remoteAddress, remotePort, remoteFamily } = socket;
    socket.destroy();
    server.emit('drop', { localAddress, localPort, localFamily, remoteAddress, remotePort, remoteFamily });
    return;
  }
  adoptConnection(acceptor, server, socket);
  server.emit('connection', socket);
}
