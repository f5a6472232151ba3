/**
 * One token bucket a client, shared by every process on the store so they enforce one quota. A process takes a slice at a time
 * and answers from it in memory, never writing per request (rate-limits/rate-limiter.ts). A bucket refills `capacity` a
 * `windowMs`; a client without a row has a full one, so full buckets' rows are pruned.
 */
export interface RateLimitStore {
  /** Takes up to `want` whole units from the bucket refilled to now, atomically; resolves them and what is left (a fraction: refill is continuous). */
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
