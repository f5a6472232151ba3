import pg from 'pg';
import { parse as parseConnectionString, toClientConfig } from 'pg-connection-string';
import type { PostgresUrl } from '../../config.js';
import { ServiceError } from '../../errors.js';
import { lostServer } from './errors.js';
import { StallWatch } from './stall-watch.js';

export interface PrimaryPoolOptions {
  /** Most connections this process opens. */
  poolSize: number;
  /** How long to wait for a connection to a server, in milliseconds. */
  connectTimeoutMs: number;
  /**
   * How long a statement may wait for its answer, in milliseconds; then its
   * connection is given up. It finds a server that stopped answering without
   * closing (a partition, a frozen host), which nothing else would.
   */
  queryTimeoutMs: number;
}

/** The part of node-postgres' Pool that the store uses. */
export interface Connections {
  query: pg.Pool['query'];
  connect(): Promise<pg.PoolClient>;
}

/** node-postgres' pool, as one signature for all of `query`'s forms. */
type Queryable = { query(...args: unknown[]): Promise<unknown> };

/** After a search that found no server to keep, the next waits this long, so a dead formation is not hammered. */
const SEARCH_AGAIN_MS = 250;

/**
 * Connections to the server that libpq's rules pick among a URL's hosts
 * (`postgres://app@node1,node2/db?target_session_attrs=read-write`), found
 * again when it goes away: how the service follows a failover without a
 * restart. node-postgres connects to one host only, so this is the layer
 * libpq has and it lacks.
 *
 * The search tries the hosts in the URL's order and keeps the first that
 * connects and, for `read-write`, is not in recovery and not read-only
 * (`pg_is_in_recovery()`, `transaction_read_only`), or for `primary`, is
 * not in recovery. A pool of connections to that server serves until one of
 * them shows the server is gone: a connection error or cut, a shutdown
 * (57P01-57P03), statements in flight with no answer within the query
 * timeout (StallWatch), or a write refused as
 * read-only (25006: the old primary came back as a standby). Then the pool
 * is dropped, its connections never reused, and the next statement searches
 * again. A statement that fails that way still fails, with 503: the client's
 * retry is safe, as the plant's id makes it idempotent.
 *
 * One host with `target_session_attrs=any` (the default) is a plain pool:
 * nothing is searched or checked, as node-postgres does alone.
 */
export class PrimaryPool implements Connections {
  readonly #url: PostgresUrl;
  readonly #servers: pg.ClientConfig[];
  readonly #options: PrimaryPoolOptions;
  /** Whether there is anything to follow: more than one host, or a host that must take writes. */
  readonly #follows: boolean;
  #pool: pg.Pool | undefined;
  /** Each pool's watch for a server gone silent, until the pool has ended. */
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

  /**
   * node-postgres' `pool.query`, on the pool of the server kept. Not an async
   * function: on the write path a statement costs what it costs on a plain
   * pool, and only a following pool watches the promise for a lost server.
   */
  readonly query = ((...args: unknown[]) => {
    const pool = this.#pool;
    if (pool === undefined) return this.#primary().then((found) => this.#checked(found, (found as unknown as Queryable).query(...args)));
    const result = (pool as unknown as Queryable).query(...args);
    return this.#follows ? this.#checked(pool, result) : result;
  }) as pg.Pool['query'];

  /** `result`, checked for a lost server when it fails. */
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

  /** The pool of the server to keep: the one in use, or the one a search (at most one at a time) finds. */
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
    // An idle connection that breaks (a restart, a cut network) is dropped by
    // the pool; the next query opens a new one. Without a listener the error
    // would end the process.
    pool.on('error', () => undefined);
    watch.watch(pool);
    this.#watches.set(pool, watch);
    return pool;
  }

  /** Forgets `pool` when it is the one kept and there is another server to look for. */
  #drop(pool: pg.Pool): void {
    if (!this.#follows || pool !== this.#pool) return;
    this.#pool = undefined;
    // Connections still in use close as they are released; a released one is never reused.
    pool
      .end()
      .catch(() => undefined)
      .finally(() => this.#watches.get(pool)?.stop());
  }

  /** Drops `pool` when `error` shows its server gone, so the next statement searches again. */
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
