import type { TracingConfig } from '../config/setting-groups.js';
import type { SpanCounters, Tracing } from './tracing.js';

/** Starts the process's tracing, given the counters of the spans it exports and drops. */
export type StartTracing = (counters: SpanCounters) => Tracing;

/**
 * Whether traces are exported: with OTEL_TRACES_EXPORTER=otlp, or with an
 * OTLP endpoint set and OTEL_TRACES_EXPORTER unset; never with `none`.
 */
export function tracingEnabled(config: TracingConfig): boolean {
  if (config.otelTracesExporter !== undefined) return config.otelTracesExporter === 'otlp';
  return config.otelExporterOtlpEndpoint !== undefined || config.otelExporterOtlpTracesEndpoint !== undefined;
}

/**
 * How to start tracing as the settings ask, or undefined when traces are off.
 * The OpenTelemetry SDK and its exporters are loaded only then: they take a
 * tenth of a second of every start, and memory, that a process without
 * traces has no use for.
 */
export async function loadTracing(config: TracingConfig): Promise<StartTracing | undefined> {
  if (!tracingEnabled(config)) return undefined;
  const { startTracing } = await import('./tracing.js');
  return (counters) => startTracing(config, counters);
}
