import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { WebhookStore } from '../store/webhook-store.js';
import type { AttemptOutcome, DeliveryMetrics } from '../webhooks/webhook-dispatcher.js';

export class WebhookMetrics implements DeliveryMetrics {
  readonly #attempts: Counter<'outcome'>;
  readonly #latency: Histogram;

  constructor(registry: Registry, store: WebhookStore) {
    this.#attempts = new Counter({
      name: 'plantstore_webhook_deliveries_total',
      help: "Webhook delivery attempts of this process, or of the deliverer serve started, by outcome: delivered, retry or failed (out of retries)",
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    this.#latency = new Histogram({
      name: 'plantstore_webhook_delivery_latency_seconds',
      help: "Time from a plant's commit to its webhook's 2xx answer",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600],
      registers: [registry],
    });
    // The two gauges read the store when scraped: they count every process's messages, not this one's.
    let backlog: Promise<Awaited<ReturnType<WebhookStore['backlog']>>> | undefined;
    /** One query a scrape for both gauges. */
    const readBacklog = () => {
      backlog ??= store.backlog().finally(() => setImmediate(() => (backlog = undefined)));
      return backlog;
    };
    new Gauge({
      name: 'plantstore_webhook_backlog_messages',
      help: 'Webhook messages waiting to be delivered, by subscription',
      labelNames: ['subscription'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const row of await readBacklog().catch(() => [])) this.set({ subscription: String(row.subscriptionId) }, row.pending);
      },
    });
    // Paused subscriptions are left out: their messages are held on purpose, and an alert on this age means deliveries are late.
    new Gauge({
      name: 'plantstore_webhook_oldest_pending_seconds',
      help: 'Age of the oldest webhook message waiting to be delivered to an active (not paused) subscription (0 when none waits)',
      registers: [registry],
      async collect() {
        const oldest = (await readBacklog().catch(() => []))
          .filter((row) => !row.paused)
          .map((row) => row.oldestCreatedAt?.getTime())
          .filter((time): time is number => time !== undefined);
        this.set(oldest.length === 0 ? 0 : Math.max(0, (Date.now() - Math.min(...oldest)) / 1000));
      },
    });
  }

  attempt(outcome: AttemptOutcome, latencySeconds?: number): void {
    this.#attempts.inc({ outcome });
    if (latencySeconds !== undefined) this.#latency.observe(latencySeconds);
  }
}
