/**
 * The shared side of the rate limits: one token bucket a client, in the
 * store every process and instance uses, so that they enforce one quota.
 * A process never writes here per request: it takes a slice of a client's
 * bucket at a time (`take`), answers from the slice in memory, and gives
 * back what it did not use (`giveBack`). See rate-limits/rate-limiter.ts.
 *
 * A bucket holds at most `capacity` and refills at `capacity` a `windowMs`;
 * a client without a row has a full one, so rows of buckets that are full
 * again are deleted (`prune`) and the table holds only recent clients.
 */
export interface RateLimitStore {
  /**
   * Takes up to `want` whole units from the client's bucket, refilled to
   * now first, in one atomic step. Resolves how many it took and what is
   * left after (a fraction: the refill is continuous).
   */
  take(key: string, bucket: BucketShape, want: number): Promise<BucketTake>;
  /** Puts units taken and not used back in their buckets, never above capacity. */
  giveBack(returns: readonly BucketReturn[]): Promise<void>;
  /** Deletes the rows of buckets that are full by now; resolves how many. */
  prune(): Promise<number>;
}

export interface BucketShape {
  readonly capacity: number;
  readonly windowMs: number;
}

export interface BucketTake {
  readonly granted: number;
  readonly left: number;
}

export interface BucketReturn extends BucketShape {
  readonly key: string;
  readonly count: number;
}
