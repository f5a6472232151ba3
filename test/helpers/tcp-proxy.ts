import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import type { TestContext } from 'node:test';

/** Given each new connection, what to call with the bytes its client sends. */
export type ClientBytesWatch = () => (chunk: Buffer) => void;

/**
 * A TCP proxy the test controls, to take a database away and give it back:
 * `cut()` drops every connection and refuses new ones; `restore()` accepts again.
 * `freeze()` is a partition: connections stay open and new ones are accepted, but no
 * byte passes either way, and nothing closes.
 * A `watch` sees what each client sends, as it passes.
 */
export class TcpProxy {
  readonly port: number;
  readonly #target: { host: string; port: number };
  #server: Server;
  readonly #sockets: Set<Socket>;
  readonly #watch: ClientBytesWatch | undefined;
  readonly #state: { frozen: boolean; pairs: Set<[Socket, Socket]> };

  private constructor(
    server: Server,
    target: { host: string; port: number },
    sockets: Set<Socket>,
    watch: ClientBytesWatch | undefined,
    state: { frozen: boolean; pairs: Set<[Socket, Socket]> },
  ) {
    this.#state = state;
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
    this.#target = target;
    this.#sockets = sockets;
    this.#watch = watch;
  }

  static async start(t: TestContext, target: { host: string; port: number }, watch?: ClientBytesWatch): Promise<TcpProxy> {
    const sockets = new Set<Socket>();
    const state = { frozen: false, pairs: new Set<[Socket, Socket]>() };
    const proxy = new TcpProxy(await TcpProxy.#listen(0, target, sockets, watch, state), target, sockets, watch, state);
    t.after(() => proxy.cut());
    return proxy;
  }

  static #listen(
    port: number,
    target: { host: string; port: number },
    sockets: Set<Socket>,
    watch: ClientBytesWatch | undefined,
    state: { frozen: boolean; pairs: Set<[Socket, Socket]> },
  ): Promise<Server> {
    const server = createServer((client) => {
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      client.on('error', () => undefined);
      // A frozen host takes the connection and answers nothing.
      if (state.frozen) return;
      const upstream = createConnection(target.port, target.host);
      if (watch !== undefined) client.on('data', watch());
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      const pair: [Socket, Socket] = [client, upstream];
      state.pairs.add(pair);
      client.on('close', () => state.pairs.delete(pair));
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
    this.#server = await TcpProxy.#listen(this.port, this.#target, this.#sockets, this.#watch, this.#state);
  }

  /** Stops every byte, both ways, on every connection, old and new, without closing any. */
  freeze(): void {
    this.#state.frozen = true;
    for (const [client, upstream] of this.#state.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }
}
