import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Connections } from './primary-pool.js';

/** A statement the store sends as a named prepared statement while the connections keep one. */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

/**
 * `text` under a name that carries a hash of it: behind a pooler that lends
 * server connections to any client, a statement found under this name is
 * this text, whichever version of the service prepared it.
 */
export function preparedStatement(label: string, text: string): PreparedStatement {
  return { name: `plantstore_${label}_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`, text };
}

/** What the server answers when a named statement is not on the connection (26000) or is there already (42P05). */
const PREPARED_STATEMENT_LOST = new Set(['26000', '42P05']);

/**
 * The store's frequent statements (a batch of plants, a webhook claim, a
 * settlement) are parsed and planned once a connection rather than once a
 * call: PostgreSQL plans a named statement five times, then keeps a generic
 * plan. Planning a claim or a settlement took longer than running it
 * (0.7 to 0.9 ms against 0.5 to 0.6).
 *
 * They go named until the connections show that they do not keep a
 * statement: a pooler in transaction mode (PgBouncer before 1.21, or without
 * `max_prepared_statements`) hands each transaction whichever server
 * connection is free. From then on every statement goes unnamed, or as the
 * unnamed form its caller gives.
 */
export class PreparedStatements {
  readonly #pool: Connections;
  #kept = true;

  constructor(pool: Connections) {
    this.#pool = pool;
  }

  /** Whether statements still go named. */
  get kept(): boolean {
    return this.#kept;
  }

  async query<R extends pg.QueryResultRow>(statement: PreparedStatement, values: unknown[], unnamed = statement.text): Promise<pg.QueryResult<R>> {
    if (this.#kept) {
      try {
        return await this.#pool.query<R>({ name: statement.name, text: statement.text, values });
      } catch (error) {
        if (!PREPARED_STATEMENT_LOST.has((error as { code?: string }).code ?? '')) throw error;
        // A statement prepared on one server connection is missing on the next one, or another
        // client prepared it there first. Either way the server refused it before running it, so
        // nothing of it was done: it is sent again unnamed, as every later one is.
        this.#kept = false;
      }
    }
    return this.#pool.query<R>(unnamed, values);
  }
}
