import type { BucketReturn, BucketShape, BucketTake, RateLimitStore } from '../rate-limit-store.js';
import { translateErrors } from './errors.js';
import type { PrimaryPool } from './primary-pool.js';

/** Milliseconds since the epoch by the database's clock, one instant for the whole statement: every instance reads the same clock. */
const NOW_MS = 'extract(epoch FROM statement_timestamp()) * 1000';
/** The bucket refilled to now: the units it held, plus the window's share since, never above capacity ($2 capacity, $4 window). */
const REFILLED = 'LEAST($2::float8, b.tokens + GREATEST(0, excluded.updated_at - b.updated_at) * $2::float8 / $4::float8)';
/** Whole units taken of it ($3 wanted); the small addend keeps 9.999999 from a refill's rounding a 10. */
const GRANTED = `LEAST($3::int, floor(${REFILLED} + 1e-9)::int)`;

/** One upsert takes a slice: its row lock serialises every instance's takes for a client, in one round trip. */
const TAKE = `
  INSERT INTO rate_limit_buckets AS b (key, tokens, granted, updated_at, full_at)
  SELECT $1, $2::float8 - LEAST($3::int, $2::float8), LEAST($3::int, $2::float8), now.ms, now.ms + LEAST($3::int, $2::float8) * $4::float8 / $2::float8
    FROM (SELECT ${NOW_MS} AS ms) AS now
  ON CONFLICT (key) DO UPDATE SET
    granted = ${GRANTED},
    tokens = ${REFILLED} - ${GRANTED},
    updated_at = excluded.updated_at,
    full_at = excluded.updated_at + ($2::float8 - (${REFILLED} - ${GRANTED})) * $4::float8 / $2::float8
  RETURNING granted, tokens`;

/** The buckets in PostgreSQL, shared by every instance on the database, through PgBouncer too (no session state). */
export class PostgresRateLimitStore implements RateLimitStore {
  readonly #pool: PrimaryPool;

  constructor(pool: PrimaryPool) {
    this.#pool = pool;
  }

  async take(key: string, bucket: BucketShape, want: number): Promise<BucketTake> {
    return translateErrors(async () => {
      const { rows } = await this.#pool.query<{ granted: number; tokens: number }>(TAKE, [key, bucket.capacity, want, bucket.windowMs]);
      return { granted: Number(rows[0]!.granted), left: Number(rows[0]!.tokens) };
    });
  }

  async giveBack(returns: readonly BucketReturn[]): Promise<void> {
    if (returns.length === 0) return;
    await translateErrors(() =>
      this.#pool.query(
        `UPDATE rate_limit_buckets AS b SET tokens = LEAST(r.capacity, b.tokens + r.count)
           FROM unnest($1::text[], $2::float8[], $3::float8[]) AS r (key, capacity, count)
          WHERE b.key = r.key`,
        [returns.map((r) => r.key), returns.map((r) => r.capacity), returns.map((r) => r.count)],
      ),
    );
  }

  async prune(): Promise<number> {
    return translateErrors(async () => (await this.#pool.query(`DELETE FROM rate_limit_buckets WHERE full_at <= ${NOW_MS}`)).rowCount ?? 0);
  }
}
