/**
 * How long to wait after the `attempt`-th failed attempt: exponential backoff
 * with full jitter (a uniform draw below the exponential bound, so that
 * messages that failed together do not come back together), never less than
 * `minMs` and never more than `maxMs`.
 */
export function retryDelayMs(attempt: number, { minMs, maxMs }: { minMs: number; maxMs: number }, random: () => number = Math.random): number {
  const bound = Math.min(maxMs, minMs * 2 ** Math.min(attempt - 1, 52));
  return Math.round(minMs + random() * (bound - minMs));
}
