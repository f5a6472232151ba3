import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { SpanCounters } from '../tracing/tracing.js';
import { RequestDurations } from './request-durations.js';

const CREATE_OUTCOMES = ['created', 'replayed', 'conflict'] as const;
export type CreateOutcome = (typeof CREATE_OUTCOMES)[number];

/** A registry per app, so that two apps in one process (the tests) never mix their counts. */
export class Metrics {
  readonly registry = new Registry();

  /** By route (the path pattern, not the raw URL), method and status. */
  readonly requests = new RequestDurations({
    name: 'plantstore_http_request_duration_seconds',
    help: 'Time from reading a request to answering it, by route, method and status',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  /** Counted in plain numbers, added to plantCreates on read: prom-client hashes and checks the labels on every `inc`, even through `labels()`. */
  readonly #creates: Record<CreateOutcome, number> = { created: 0, replayed: 0, conflict: 0 };

  /** replayed: the same plant again; conflict: another plant holds the id. */
  readonly plantCreates = new Counter({
    name: 'plantstore_plant_creates_total',
    help: 'POST /plants that reached the store, by outcome: created, replayed or conflict',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
    // prom-client calls this before every read of the counter.
    collect: () => {
      for (const outcome of CREATE_OUTCOMES) {
        const count = this.#creates[outcome];
        if (count === 0) continue;
        this.#creates[outcome] = 0;
        this.plantCreates.inc({ outcome }, count);
      }
    },
  });

  countCreate(outcome: CreateOutcome): void {
    this.#creates[outcome] += 1;
  }

  readonly authFailures = authFailuresCounter(this.registry);

  /** By policy, never by client: the number of clients has no bound. */
  readonly rateLimited = new Counter({
    name: 'plantstore_rate_limited_total',
    help: 'Creates answered 429 over a client rate limit, by policy: default (RATE_LIMIT) or token (a token of its own)',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  });

  /** A token in use is only refreshed, every half TOKEN_CACHE_TTL_MS. */
  readonly tokenLookups = new Counter({
    name: 'plantstore_token_lookups_total',
    help: 'Bearer tokens looked up in the store: found or unknown (a request waited), or refresh (a token in use, in the background)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  /** max_connections: closed at once by node:http; per_address (MAX_CONNECTIONS_PER_ADDRESS): answered 429 first. */
  readonly connectionsRefused = new Counter({
    name: 'plantstore_connections_refused_total',
    help: 'Connections refused as they opened, by the limit they were past: max_connections or per_address',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly commitDuration = new Histogram({
    name: 'plantstore_store_commit_duration_seconds',
    help: 'Time to write and commit one batch of plants',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });

  readonly commitBatchSize = new Histogram({
    name: 'plantstore_store_commit_batch_size',
    help: 'Plants written in one commit (group commit)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    registers: [this.registry],
  });

  readonly spans = spanCounters(this.registry);

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}

/** The exporter's counts of the spans it sent and dropped, on a server's registry or a deliverer's. */
export function spanCounters(registry: Registry): SpanCounters {
  return {
    exported: new Counter({ name: 'plantstore_trace_spans_exported_total', help: 'Spans exported to the OTLP receiver', registers: [registry] }),
    // A create never waits for the exporter: a full queue or a failed export drops spans.
    dropped: new Counter({
      name: 'plantstore_trace_spans_dropped_total',
      help: "Spans dropped, by reason: queue_full, or the failed export's error",
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
  };
}

/** Refused authentications, on a server's registry or a deliverer's (whose GET /metrics may ask for METRICS_TOKEN too). */
export function authFailuresCounter(registry: Registry): Counter<'reason'> {
  return new Counter({
    name: 'plantstore_auth_failures_total',
    help: 'Refused authentications, by reason: missing, unknown, revoked, expired, rate_limited, and jwt_* for JWTs',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
}
