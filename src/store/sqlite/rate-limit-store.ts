import type Database from 'better-sqlite3';
import type { BucketReturn, BucketShape, BucketTake, RateLimitStore } from '../rate-limit-store.js';
import { translateErrors } from './errors.js';

/** The bucket refilled to now: the units it held, plus the window's share since, never above capacity. */
const REFILLED = 'min(@capacity, tokens + max(0.0, excluded.updated_at - updated_at) * @capacity / (@window * 1.0))';
/** Whole units taken of it; the small addend keeps 9.999999 from a refill's rounding a 10. */
const GRANTED = `min(@want, CAST(${REFILLED} + 1e-9 AS INTEGER))`;

/**
 * On the outbox's synchronous=NORMAL connection: a take commits without an fsync; a power loss may forget the last takes (clients
 * may get up to a slice more), a kill -9 none. One statement takes a slice: the write lock serialises every process's takes.
 */
export class SqliteRateLimitStore implements RateLimitStore {
  readonly #take;
  readonly #giveBack;
  readonly #giveBackAll;
  readonly #prune;

  constructor(db: Database.Database) {
    this.#take = db.prepare(
      `INSERT INTO rate_limit_buckets (key, tokens, granted, updated_at, full_at)
       VALUES (@key, @capacity - min(@want, @capacity), min(@want, @capacity), @now, @now + min(@want, @capacity) * @window / (@capacity * 1.0))
       ON CONFLICT (key) DO UPDATE SET
         granted = ${GRANTED},
         tokens = ${REFILLED} - ${GRANTED},
         updated_at = excluded.updated_at,
         full_at = excluded.updated_at + (@capacity - (${REFILLED} - ${GRANTED})) * @window / (@capacity * 1.0)
       RETURNING granted, tokens`,
    );
    this.#giveBack = db.prepare('UPDATE rate_limit_buckets SET tokens = min(@capacity, tokens + @count) WHERE key = @key');
    this.#giveBackAll = db.transaction((returns: readonly BucketReturn[]) => {
      for (const { key, capacity, count } of returns) this.#giveBack.run({ key, capacity, count });
    });
    this.#prune = db.prepare('DELETE FROM rate_limit_buckets WHERE full_at <= ?');
  }

  async take(key: string, bucket: BucketShape, want: number): Promise<BucketTake> {
    return translateErrors(() => {
      const row = this.#take.get({ key, capacity: bucket.capacity, window: bucket.windowMs, want, now: Date.now() }) as {
        granted: number;
        tokens: number;
      };
      return { granted: row.granted, left: row.tokens };
    });
  }

  async giveBack(returns: readonly BucketReturn[]): Promise<void> {
    translateErrors(() => this.#giveBackAll.immediate(returns));
  }

  async prune(): Promise<number> {
    return translateErrors(() => this.#prune.run(Date.now()).changes);
  }
}
