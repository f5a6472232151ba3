import { once } from 'node:events';
import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { queryOnce } from './postgres-servers.js';

/**
 * A TCP proxy on a loopback port that sends every new connection to one
 * PostgreSQL node, the target, which the test switches: the way HAProxy with
 * a health check follows a primary. Switching (`switchTo`) cuts every open
 * session, as HAProxy's `on-marked-down shutdown-sessions` does; with no
 * target, a new connection is closed at once. `follow` switches by itself,
 * to whichever candidate answers `pg_is_in_recovery()` with false.
 */
export class PrimaryProxy {
  readonly port: number;
  #target: number | undefined;
  readonly #server: Server;
  readonly #sessions = new Set<{ client: Socket; upstream: Socket }>();
  #following: { stop: boolean; done: Promise<void> } | undefined;
  /** Every switch so far, in order: the port (or undefined for none) and when. */
  readonly switches: { target: number | undefined; at: number }[] = [];

  private constructor(server: Server, target: number | undefined) {
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
    this.#target = target;
  }

  /** Listens on a free loopback port, routing to `target` (a port on 127.0.0.1) if given; closed after the test. */
  static async start(t: TestContext, target?: number): Promise<PrimaryProxy> {
    let proxy: PrimaryProxy | undefined;
    const server = createServer((client) => {
      if (proxy === undefined) client.destroy();
      else proxy.#accept(client);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const started = new PrimaryProxy(server, target);
    proxy = started;
    t.after(() => started.close());
    return started;
  }

  /** The port new connections go to, or undefined when they are refused. */
  get target(): number | undefined {
    return this.#target;
  }

  /** How many sessions are open through the proxy. */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** postgres://postgres@127.0.0.1:PORT/DATABASE through the proxy. */
  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${encodeURIComponent(database)}`;
  }

  /** Routes new connections to `target` (undefined: refuses them) and cuts every open session; resolves once they are closed. */
  async switchTo(target: number | undefined): Promise<void> {
    this.#target = target;
    this.switches.push({ target, at: Date.now() });
    const closing = [...this.#sessions].flatMap(({ client, upstream }) =>
      [client, upstream].filter((socket) => !socket.closed).map((socket) => new Promise((resolve) => socket.once('close', resolve))),
    );
    for (const { client, upstream } of this.#sessions) {
      client.destroy();
      upstream.destroy();
    }
    await Promise.all(closing);
  }

  /**
   * Checks every candidate (ports on 127.0.0.1) every `intervalMs` with
   * `SELECT pg_is_in_recovery()`, each check bounded by `checkTimeoutMs`,
   * and switches to the one that takes writes: keeps the target while it
   * passes, switches to no target when it fails (down, frozen, or back in
   * recovery) and no other candidate passes. Runs until `stopFollowing()` or
   * the end of the test.
   */
  follow(candidates: readonly number[], options: { intervalMs?: number; checkTimeoutMs?: number; user?: string; database?: string } = {}): void {
    if (this.#following !== undefined) throw new Error('the proxy follows already');
    const { intervalMs = 200, checkTimeoutMs = 1_000, user = 'postgres', database = 'postgres' } = options;
    const state = { stop: false, done: Promise.resolve() };
    const check = async (port: number): Promise<boolean> => {
      try {
        const rows = await queryOnce<{ r: boolean }>({ host: '127.0.0.1', port, user, database }, 'SELECT pg_is_in_recovery() AS r', [], checkTimeoutMs);
        return rows[0]?.r === false;
      } catch {
        return false;
      }
    };
    state.done = (async () => {
      while (!state.stop) {
        const passing = (await Promise.all(candidates.map(async (port) => ((await check(port)) ? port : undefined)))).filter((port) => port !== undefined);
        if (state.stop) break;
        const next = this.#target !== undefined && passing.includes(this.#target) ? this.#target : passing[0];
        if (next !== this.#target) await this.switchTo(next);
        await sleep(intervalMs);
      }
    })();
    this.#following = state;
  }

  /** Ends `follow`; resolves once its last check is done. */
  async stopFollowing(): Promise<void> {
    const following = this.#following;
    if (following === undefined) return;
    following.stop = true;
    await following.done;
    this.#following = undefined;
  }

  /** Stops following, cuts every session and stops listening. */
  async close(): Promise<void> {
    await this.stopFollowing();
    const closed = new Promise((resolve) => this.#server.close(resolve));
    this.#target = undefined;
    for (const { client, upstream } of this.#sessions) {
      client.destroy();
      upstream.destroy();
    }
    await closed;
  }

  #accept(client: Socket): void {
    client.on('error', () => undefined);
    if (this.#target === undefined) {
      client.destroy();
      return;
    }
    const upstream = createConnection(this.#target, '127.0.0.1');
    upstream.on('error', () => undefined);
    const session = { client, upstream };
    this.#sessions.add(session);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.#sessions.delete(session);
    };
    client.on('close', end);
    upstream.on('close', end);
  }
}
