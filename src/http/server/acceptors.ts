import type { Server } from 'node:http';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { adoptConnection, connectionCount, countsConnections } from './node-internals.js';

/** Listening sockets on the server's address, its own included: the kernel spreads connections over them, and each turn accepts one on each. */
export const ACCEPTING_SOCKETS = 8;

/** Rejects with EADDRINUSE when another server listens there: with `reusePort`, a second server would share the port rather than fail. */
export async function checkAddressFree(host: string, port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port }, resolve);
  });
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * Binds `server`'s address ACCEPTING_SOCKETS - 1 more times, their connections counted as its own (MAX_CONNECTIONS, close()):
 * libuv accepts one connection per socket per turn (libuv/libuv#3696), and a saturated turn lasts a batch of creates
 * (bench/results/2026-11-27-accepting-sockets.md). The handle's close() stops the other sockets accepting.
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
