import pg from 'pg';
import { parse as parseConnectionString, toClientConfig } from 'pg-connection-string';
import type { PostgresUrl } from '../../config/config.js';
import { ServiceError } from '../../errors.js';
import { lostServer } from './errors.js';
import { StallWatch } from './stall-watch.js';

export interface PrimaryPoolOptions {
  /** Most connections this process opens. */
  poolSize: number;
  connectTimeoutMs: number;
  /** Past it the connection is given up: the one way to find a server that stopped answering without closing. */
  queryTimeoutMs: number;
}

/** The part of node-postgres' Pool that the store uses. */
export interface Connections {
  query: pg.Pool['query'];
  connect(): Promise<pg.PoolClient>;
}

type Queryable = { query(...args: unknown[]): Promise<unknown> };

/** After a search that found no server to keep, the next waits this long, so a dead formation is not hammered. */
const SEARCH_AGAIN_MS = 250;

/**
 * Follows a failover without a restart: connections to the server libpq's rules pick among a URL's hosts
 * (`target_session_attrs`), which node-postgres alone does not do. The pool is dropped when a statement shows
 * its server gone (`lostServer`, StallWatch) and the next one searches again; the failed statement still answers
 * 503, and its retry is safe as the plant's id makes it idempotent. One host with `any` is a plain pool.
 */
export class PrimaryPool implements Connections {
  readonly #url: PostgresUrl;
  readonly #servers: pg.ClientConfig[];
  readonly #options: PrimaryPoolOptions;
  /** Whether there is anything to follow: more than one host, or a host that must take writes. */
  readonly #follows: boolean;
  #pool: pg.Pool | undefined;
  readonly #watches = new WeakMap<pg.Pool, StallWatch>();
  #search: Promise<pg.Pool> | undefined;
  #lastRefusal: { at: number; error: ServiceError } | undefined;
  #ended = false;
  readonly #watchedClients = new WeakSet<pg.PoolClient>();

  constructor(url: PostgresUrl, options: PrimaryPoolOptions) {
    this.#url = url;
    this.#options = options;
    this.#follows = url.hosts.length > 1 || url.targetSessionAttrs !== 'any';
    // libpq's meanings of sslmode: `require` encrypts without checking the certificate, `verify-ca` and `verify-full` check it.
    this.#servers = url.singleHostUrls.map((single) => ({
      application_name: 'plantstore',
      ...toClientConfig(parseConnectionString(single, { useLibpqCompat: true })),
      connectionTimeoutMillis: options.connectTimeoutMs,
      keepAlive: true,
    }));
  }

  /** Not an async function, so that on the write path a statement costs what it costs on a plain pool. */
  readonly query = ((...args: unknown[]) => {
    const pool = this.#pool;
    if (pool === undefined) return this.#primary().then((found) => this.#checked(found, (found as unknown as Queryable).query(...args)));
    const result = (pool as unknown as Queryable).query(...args);
    return this.#follows ? this.#checked(pool, result) : result;
  }) as pg.Pool['query'];

  #checked(pool: pg.Pool, result: Promise<unknown>): Promise<unknown> {
    if (!this.#follows) return result;
    result.catch((error: unknown) => this.#check(pool, error));
    return result;
  }

  async connect(): Promise<pg.PoolClient> {
    const pool = this.#pool ?? (await this.#primary());
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      this.#check(pool, error);
      throw error;
    }
    if (this.#follows) this.#watchClient(pool, client);
    return client;
  }

  get ended(): boolean {
    return this.#ended;
  }

  async end(): Promise<void> {
    this.#ended = true;
    await this.#search?.catch(() => undefined);
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.end();
    if (pool !== undefined) this.#watches.get(pool)?.stop();
  }

  #primary(): Promise<pg.Pool> {
    if (this.#ended) return Promise.reject(new Error('Cannot use a pool after calling end on the pool'));
    const refused = this.#lastRefusal;
    if (refused !== undefined && Date.now() - refused.at < SEARCH_AGAIN_MS) return Promise.reject(refused.error);
    return (this.#search ??= this.#find().finally(() => (this.#search = undefined)));
  }

  async #find(): Promise<pg.Pool> {
    const refusals: string[] = [];
    for (const [i, server] of this.#servers.entries()) {
      const problem = this.#follows ? await this.#refusal(server) : undefined;
      if (problem === undefined) {
        this.#lastRefusal = undefined;
        this.#pool = this.#open(server);
        return this.#pool;
      }
      const { host, port } = this.#url.hosts[i]!;
      refusals.push(`${host}:${port} ${problem}`);
    }
    const cause = new Error(`no server of DATABASE_URL is ${this.#url.targetSessionAttrs === 'any' ? 'reachable' : 'a primary'}: ${refusals.join('; ')}`);
    const error = new ServiceError('STORE_UNAVAILABLE', { cause });
    this.#lastRefusal = { at: Date.now(), error };
    throw error;
  }

  /** Why a server is not the one to keep, or undefined when it is. */
  async #refusal(server: pg.ClientConfig): Promise<string | undefined> {
    const client = new pg.Client({ ...server, query_timeout: this.#options.queryTimeoutMs });
    client.on('error', () => undefined);
    try {
      await client.connect();
      if (this.#url.targetSessionAttrs === 'any') return undefined;
      const { rows } = await client.query<{ recovery: boolean; read_only: string }>(
        "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only",
      );
      if (rows[0]!.recovery) return 'is in recovery (a standby)';
      if (this.#url.targetSessionAttrs === 'read-write' && rows[0]!.read_only === 'on') return 'is read-only';
      return undefined;
    } catch (error) {
      return `did not answer (${(error as Error).message})`;
    } finally {
      client.end().catch(() => undefined);
    }
  }

  #open(server: pg.ClientConfig): pg.Pool {
    const watch = new StallWatch(this.#options.queryTimeoutMs, () => this.#drop(pool));
    const pool = new pg.Pool({ ...server, max: this.#options.poolSize, stream: watch.socket });
    // An idle connection that breaks is dropped by the pool; without a listener its error would end the process.
    pool.on('error', () => undefined);
    watch.watch(pool);
    this.#watches.set(pool, watch);
    return pool;
  }

  #drop(pool: pg.Pool): void {
    if (!this.#follows || pool !== this.#pool) return;
    this.#pool = undefined;
    // Connections still in use close as they are released; a released one is never reused.
    pool
      .end()
      .catch(() => undefined)
      .finally(() => this.#watches.get(pool)?.stop());
  }

  #check(pool: pg.Pool, error: unknown): void {
    if (lostServer(error)) this.#drop(pool);
  }

  /** Checks the errors of a connection's statements too: the webhook dispatcher's transactions run on one. */
  #watchClient(pool: pg.Pool, client: pg.PoolClient): void {
    if (this.#watchedClients.has(client)) return;
    this.#watchedClients.add(client);
    const query = client.query as (...args: unknown[]) => unknown;
    const check = (error: unknown) => this.#check(pool, error);
    client.query = ((...args: unknown[]) => {
      const result = query.apply(client, args);
      if (result instanceof Promise) result.catch(check);
      return result;
    }) as pg.PoolClient['query'];
  }
}
