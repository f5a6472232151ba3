/** Scrapes of the service's `GET /metrics` that the webhook measurement reads. */

/** Longest a scrape may take: a saturated service answers late, and no wait of the benchmark is unbounded. */
const SCRAPE_TIMEOUT_MS = 5_000;

/** The value of the sample `series` (a metric's name with its labels, as /metrics writes it), or undefined when absent. */
export async function metricValue(serviceUrl: string, series: string): Promise<number | undefined> {
  const response = await fetch(`${serviceUrl}/metrics`, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) });
  const text = await response.text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Plants the service has created since it started. */
export async function plantsCreated(serviceUrl: string): Promise<number> {
  return (await metricValue(serviceUrl, 'plantstore_plant_creates_total{outcome="created"}')) ?? 0;
}

/** What `sampleOldestPending` saw. */
export interface OldestPending {
  /** The largest `plantstore_webhook_oldest_pending_seconds` of the samples, NaN when none succeeded. */
  maxSeconds: number;
  samples: number;
  /** Scrapes that failed or took longer than SCRAPE_TIMEOUT_MS. */
  failed: number;
}

/**
 * Reads `plantstore_webhook_oldest_pending_seconds` about every `everyMs` until `stop` is called,
 * one scrape at a time (a slow answer delays the next rather than piling scrapes on the service).
 */
export function sampleOldestPending(serviceUrl: string, everyMs: number): { stop(): Promise<OldestPending> } {
  const seen: OldestPending = { maxSeconds: NaN, samples: 0, failed: 0 };
  let stopped = false;
  let wake: (() => void) | undefined;
  const sampling = (async () => {
    while (!stopped) {
      const started = Date.now();
      try {
        const value = await metricValue(serviceUrl, 'plantstore_webhook_oldest_pending_seconds');
        if (value === undefined || Number.isNaN(value)) throw new Error('no plantstore_webhook_oldest_pending_seconds');
        seen.maxSeconds = Number.isNaN(seen.maxSeconds) ? value : Math.max(seen.maxSeconds, value);
        seen.samples += 1;
      } catch {
        seen.failed += 1;
      }
      const rest = everyMs - (Date.now() - started);
      if (rest > 0 && !stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, rest);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      wake?.();
      await sampling;
      return seen;
    },
  };
}
