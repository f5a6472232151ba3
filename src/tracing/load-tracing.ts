import type { TracingConfig } from '../config/setting-groups.js';
import type { SpanCounters, Tracing } from './tracing.js';

export type StartTracing = (counters: SpanCounters) => Tracing;

/** With OTEL_TRACES_EXPORTER=otlp, or with an OTLP endpoint set and OTEL_TRACES_EXPORTER unset; never with `none`. */
export function tracingEnabled(config: TracingConfig): boolean {
  if (config.otelTracesExporter !== undefined) return config.otelTracesExporter === 'otlp';
  return config.otelExporterOtlpEndpoint !== undefined || config.otelExporterOtlpTracesEndpoint !== undefined;
}

/** The SDK and its exporters load only when traces are on: their start-up time and memory are of no use to a process without traces. */
export async function loadTracing(config: TracingConfig): Promise<StartTracing | undefined> {
  if (!tracingEnabled(config)) return undefined;
  const { startTracing } = await import('./tracing.js');
  return (counters) => startTracing(config, counters);
}
