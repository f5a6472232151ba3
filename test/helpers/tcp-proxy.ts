import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { TestContext } from 'node:test';

/**
 * A TCP proxy the test controls, to take a database away and give it back:
 * `cut()` drops every connection and refuses new ones; `restore()` accepts again.
 */
export class TcpProxy {
  readonly port: number;
  readonly #target: { host: string; port: number };
  #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(server: Server, port: number, target: { host: string; port: number }) {
    this.#server = server;
    this.port = port;
    this.#target = target;
  }

  static async start(t: TestContext, target: { host: string; port: number }): Promise<TcpProxy> {
    const server = await TcpProxy.#listen(0, target, new Set());
    const proxy = new TcpProxy(server, (server.address() as { port: number }).port, target);
    proxy.#server.close();
    proxy.#server = await TcpProxy.#listen(proxy.port, target, proxy.#sockets);
    t.after(() => proxy.cut());
    return proxy;
  }

  static #listen(port: number, target: { host: string; port: number }, sockets: Set<Socket>): Promise<Server> {
    const server = createServer((client) => {
      const upstream = createConnection(target.port, target.host);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
  }

  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.#server.close(resolve));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  async restore(): Promise<void> {
    this.#server = await TcpProxy.#listen(this.port, this.#target, this.#sockets);
  }
}
