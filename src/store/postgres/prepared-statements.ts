import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Connections } from './primary-pool.js';

/** A statement the store sends as a named prepared statement while the connections keep one. */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

/** The name carries a hash of `text`: behind a pooler, a statement found under it is this text, whichever version prepared it. */
export function preparedStatement(label: string, text: string): PreparedStatement {
  return { name: `plantstore_${label}_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`, text };
}

/** What the server answers when a named statement is not on the connection (26000) or is there already (42P05). */
const PREPARED_STATEMENT_LOST = new Set(['26000', '42P05']);

/**
 * The frequent statements (a plant batch, a claim, a settlement) go named, so that they are planned once a
 * connection: planning a claim or a settlement costs more than running it. From the first sign the connections
 * keep no statement (PgBouncer in transaction mode without `max_prepared_statements`), all go unnamed.
 */
export class PreparedStatements {
  readonly #pool: Connections;
  #kept = true;

  constructor(pool: Connections) {
    this.#pool = pool;
  }

  get kept(): boolean {
    return this.#kept;
  }

  async query<R extends pg.QueryResultRow>(statement: PreparedStatement, values: unknown[], unnamed = statement.text): Promise<pg.QueryResult<R>> {
    if (this.#kept) {
      try {
        return await this.#pool.query<R>({ name: statement.name, text: statement.text, values });
      } catch (error) {
        if (!PREPARED_STATEMENT_LOST.has((error as { code?: string }).code ?? '')) throw error;
        // The server refused it before running it, so nothing of it was done: it is safe to send again unnamed.
        this.#kept = false;
      }
    }
    return this.#pool.query<R>(unnamed, values);
  }
}
