import type { Server } from 'node:http';
import { createServer, type Server as NetServer, type Socket } from 'node:net';

/**
 * Listening sockets on the server's address, the server's own included. The
 * kernel hands each new connection to one of them (by the connection's
 * addresses), and each event-loop turn accepts one connection on each.
 */
export const ACCEPTING_SOCKETS = 8;

/** node:net's own count of a server's connections: what MAX_CONNECTIONS, close() and getConnections() read. */
interface NetAccounting {
  _connections: number;
}

/**
 * Whether this Node.js binds with SO_REUSEPORT (`reusePort`, Node.js 22.12
 * and 23.1 on). Node.js 20 does not: there the server listens on one socket.
 */
export function reusePortSupported(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

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
 * first, so no connection is accepted once it stops listening.
 */
export async function acceptOnMoreSockets(server: Server): Promise<void> {
  const address = server.address();
  if (address === null || typeof address === 'string' || !hasNetAccounting(server)) return;
  const bound = await Promise.allSettled(Array.from({ length: ACCEPTING_SOCKETS - 1 }, () => listenBeside(server, address.address, address.port)));
  const acceptors = bound.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = bound.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    for (const acceptor of acceptors) acceptor.close();
    throw failed.reason;
  }
  const close = server.close.bind(server);
  server.close = (callback?: (error?: Error) => void) => {
    for (const acceptor of acceptors) acceptor.close();
    return close(callback);
  };
}

function listenBeside(server: Server & NetAccounting, host: string, port: number): Promise<NetServer> {
  // node:http's servers set TCP_NODELAY on what they accept; these do the same.
  const acceptor = createServer({ noDelay: true }, (socket) => handOver(acceptor as NetServer & NetAccounting, server, socket));
  return new Promise((resolve, reject) => {
    acceptor.once('error', reject);
    acceptor.listen({ host, port, reusePort: true }, () => {
      acceptor.off('error', reject);
      resolve(acceptor);
    });
  });
}

/** As node:net's onconnection (lib/net.js) does for a connection its server accepted itself. */
function handOver(acceptor: NetServer & NetAccounting, server: Server & NetAccounting, socket: Socket): void {
  acceptor._connections -= 1;
  if (server.maxConnections !== undefined && server.maxConnections !== null && server._connections >= server.maxConnections) {
    const { localAddress, localPort, localFamily, remoteAddress, remotePort, remoteFamily } = socket;
    socket.destroy();
    server.emit('drop', { localAddress, localPort, localFamily, remoteAddress, remotePort, remoteFamily });
    return;
  }
  server._connections += 1;
  // node:net lowers this server's count when the socket closes.
  Object.assign(socket, { server, _server: server });
  server.emit('connection', socket);
}

function hasNetAccounting(server: Server): server is Server & NetAccounting {
  return typeof (server as Partial<NetAccounting>)._connections === 'number';
}
