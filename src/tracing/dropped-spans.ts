import { createNoopMeter, type Attributes, type Meter, type MeterProvider } from '@opentelemetry/api';
import type { Counter } from 'prom-client';

/** The SDK's counter of the spans its processor finished with, an `error.type` on those it dropped. */
const PROCESSED_SPANS = 'otel.sdk.processor.span.processed';

/**
 * The SDK's self-observability, reported through a MeterProvider: the service has no OpenTelemetry metrics pipeline,
 * so this provider keeps only PROCESSED_SPANS and gives the SDK no-op instruments for the rest.
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
