import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import type { TestContext } from 'node:test';

/** Given each new connection, what to call with the bytes its client sends. */
export type ClientBytesWatch = () => (chunk: Buffer) => void;

/**
 * A TCP proxy the test controls, to take a database away and give it back:
 * `cut()` drops every connection and refuses new ones; `restore()` accepts again.
 * A `watch` sees what each client sends, as it passes.
 */
export class TcpProxy {
  readonly port: number;
  readonly #target: { host: string; port: number };
  #server: Server;
  readonly #sockets: Set<Socket>;
  readonly #watch: ClientBytesWatch | undefined;

  private constructor(server: Server, target: { host: string; port: number }, sockets: Set<Socket>, watch: ClientBytesWatch | undefined) {
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
    this.#target = target;
    this.#sockets = sockets;
    this.#watch = watch;
  }

  static async start(t: TestContext, target: { host: string; port: number }, watch?: ClientBytesWatch): Promise<TcpProxy> {
    const sockets = new Set<Socket>();
    const proxy = new TcpProxy(await TcpProxy.#listen(0, target, sockets, watch), target, sockets, watch);
    t.after(() => proxy.cut());
    return proxy;
  }

  static #listen(port: number, target: { host: string; port: number }, sockets: Set<Socket>, watch: ClientBytesWatch | undefined): Promise<Server> {
    const server = createServer((client) => {
      const upstream = createConnection(target.port, target.host);
      if (watch !== undefined) client.on('data', watch());
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
    this.#server = await TcpProxy.#listen(this.port, this.#target, this.#sockets, this.#watch);
  }
}
