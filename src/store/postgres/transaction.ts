import type pg from 'pg';
import type { Connections } from './primary-pool.js';

const ROLL_BACK = Symbol('roll back');

/** What `work` returns to have its transaction rolled back, and `result` answered. */
export interface RolledBack<R> {
  readonly [ROLL_BACK]: R;
}

export function rollBack<R>(result: R): RolledBack<R> {
  return { [ROLL_BACK]: result };
}

function isRolledBack<R>(value: unknown): value is RolledBack<R> {
  return typeof value === 'object' && value !== null && ROLL_BACK in value;
}

/**
 * Commits when `work` resolves, rolls back when it throws or answers `rollBack(...)`. A connection whose
 * rollback failed may still be inside the transaction, so it is closed rather than lent again.
 */
export async function inTransaction<T, R = never>(pool: Connections, work: (client: pg.PoolClient) => Promise<T | RolledBack<R>>): Promise<T | R> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    if (isRolledBack<R>(result)) {
      await client.query('ROLLBACK');
      return result[ROLL_BACK];
    }
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => (broken = true));
    throw error;
  } finally {
    client.release(broken);
  }
}
