import { createNoopMeter, type Attributes, type Meter, type MeterProvider } from '@opentelemetry/api';
import type { Counter } from 'prom-client';

/** The SDK's own counter of the spans its processor finished with, an `error.type` on those it dropped. */
const PROCESSED_SPANS = 'otel.sdk.processor.span.processed';

/**
 * The span processor's own counts (the SDK's self-observability, which it
 * reports through a MeterProvider) into `exported` and `dropped`: a span
 * finished without an error was exported, one with an `error.type` was
 * dropped, for a full queue (`queue_full`) or a failed export (the error's
 * name). The service has no OpenTelemetry metrics pipeline, so this
 * provider keeps only that counter and gives the SDK no-op instruments for
 * the rest.
 */
export function spanCountsMeterProvider(exported: Counter, dropped: Counter<'reason'>): MeterProvider {
  const noop = createNoopMeter();
  const meter: Meter = Object.create(noop) as Meter;
  meter.createCounter = ((name: string, options) => {
    if (name !== PROCESSED_SPANS) return noop.createCounter(name, options);
    return {
      add(count: number, attributes?: Attributes) {
        const reason = attributes?.['error.type'];
        if (reason === undefined) exported.inc(count);
        else dropped.inc({ reason: String(reason) }, count);
      },
    };
  }) as Meter['createCounter'];
  return { getMeter: () => meter };
}
