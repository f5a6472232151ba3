/** Exponential backoff with full jitter, so that messages that failed together do not come back together, within `minMs` and `maxMs`. */
export function retryDelayMs(attempt: number, { minMs, maxMs }: { minMs: number; maxMs: number }, random: () => number = Math.random): number {
  const bound = Math.min(maxMs, minMs * 2 ** Math.min(attempt - 1, 52));
  return Math.round(minMs + random() * (bound - minMs));
}
