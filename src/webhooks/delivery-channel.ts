import type { AttemptOutcome, DeliveryMetrics } from './webhook-dispatcher.js';

// What `serve` and the deliverer it started say to each other over their IPC channel: serve tells of messages it
// committed, so that the deliverer looks at once rather than at its next poll; the deliverer tells of its attempts,
// so that serve's GET /metrics counts them under the names a deliverer apart serves on its own.

export const MESSAGES_WRITTEN = { plantstore: 'messages-written' } as const;
/** The deliverer's first word: it has started, and its start's work is done. */
export const DELIVERING = { plantstore: 'delivering' } as const;

export interface AttemptsReport {
  readonly plantstore: 'attempts';
  readonly outcomes: Readonly<Record<AttemptOutcome, number>>;
  /** Seconds from each delivered message's commit to its 2xx. */
  readonly latencies: readonly number[];
}

/** The deliverer tells of its attempts at most this often: a message a delivery would cost the channel more than the delivery. */
const REPORT_EVERY_MS = 500;

/** What a message on the channel is, by its `plantstore` field; undefined for one of another sender. */
const kindOf = (message: unknown): unknown => (message as { plantstore?: unknown } | null)?.plantstore;

export function isMessagesWritten(message: unknown): boolean {
  return kindOf(message) === MESSAGES_WRITTEN.plantstore;
}

export function isDelivering(message: unknown): boolean {
  return kindOf(message) === DELIVERING.plantstore;
}

export function isAttemptsReport(message: unknown): message is AttemptsReport {
  return kindOf(message) === 'attempts';
}

/** Counts what a report tells into `metrics`. */
export function countReported(metrics: DeliveryMetrics, report: AttemptsReport): void {
  for (const outcome of ['retry', 'failed'] as const) for (let i = 0; i < report.outcomes[outcome]; i++) metrics.attempt(outcome);
  for (const latency of report.latencies) metrics.attempt('delivered', latency);
}

/** The deliverer's side: attempts gathered and sent to the server that started it, every REPORT_EVERY_MS. */
export class ReportedAttempts implements DeliveryMetrics {
  readonly #send: (report: AttemptsReport) => void;
  #outcomes = { delivered: 0, retry: 0, failed: 0 };
  #latencies: number[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(send: (report: AttemptsReport) => void) {
    this.#send = send;
    this.#timer = setInterval(() => this.flush(), REPORT_EVERY_MS).unref();
  }

  attempt(outcome: AttemptOutcome, latencySeconds?: number): void {
    this.#outcomes[outcome] += 1;
    if (latencySeconds !== undefined) this.#latencies.push(latencySeconds);
  }

  /** Sends what was gathered since the last report, if anything was. */
  flush(): void {
    const outcomes = this.#outcomes;
    if (outcomes.delivered + outcomes.retry + outcomes.failed === 0) return;
    this.#send({ plantstore: 'attempts', outcomes, latencies: this.#latencies });
    this.#outcomes = { delivered: 0, retry: 0, failed: 0 };
    this.#latencies = [];
  }

  stop(): void {
    clearInterval(this.#timer);
    this.flush();
  }
}

/** Calls `send` at most once every `gapMs`: a call inside the gap is sent at its end, once for all the calls in it. */
export function coalesced(send: () => void, gapMs: number): () => void {
  let lastAt = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  const fire = () => {
    timer = undefined;
    lastAt = performance.now();
    send();
  };
  return () => {
    if (timer !== undefined) return;
    const wait = lastAt + gapMs - performance.now();
    if (wait <= 0) fire();
    else timer = setTimeout(fire, wait).unref();
  };
}
