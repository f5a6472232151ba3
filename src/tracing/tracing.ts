import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Counter } from 'prom-client';
import type { TracingConfig } from '../config/setting-groups.js';
import { VERSION } from '../version.js';
import { CommitSpans, type DatabaseSystem } from './commit-spans.js';
import { DeliverySpans } from './delivery-spans.js';
import { spanCountsMeterProvider } from './dropped-spans.js';
import { ExportConnections } from './export-connections.js';
import { RequestSpans } from './request-spans.js';
import { samplerOf } from './sampler.js';

const DEFAULT_ENDPOINT = 'http://localhost:4318/';

/** Longest a stopping process waits for its last spans to be exported: a receiver away must not hold a shutdown up. */
export const FINAL_EXPORT_MS = 2000;

export interface SpanCounters {
  exported: Counter;
  dropped: Counter<'reason'>;
}

/** What makes the process's spans, and how to stop it. */
export interface Tracing {
  readonly requests: RequestSpans;
  commits(system: DatabaseSystem): CommitSpans;
  readonly deliveries: DeliverySpans;
  /** Exports the spans still queued, for at most FINAL_EXPORT_MS, and stops. */
  shutdown(): Promise<void>;
}

/** The traces endpoint as given, or the base endpoint's `v1/traces` (the OTLP exporter specification). */
export function tracesUrl(config: TracingConfig): string {
  if (config.otelExporterOtlpTracesEndpoint !== undefined) return config.otelExporterOtlpTracesEndpoint;
  const base = config.otelExporterOtlpEndpoint ?? DEFAULT_ENDPOINT;
  return new URL('v1/traces', base.endsWith('/') ? base : `${base}/`).href;
}

/**
 * Nothing is registered globally and no context manager follows async calls: that would cost every request, traced or not.
 * The export queue is bounded: an exporter that cannot keep up drops spans and counts them, and a create never waits for it.
 */
export function startTracing(config: TracingConfig, counters: SpanCounters): Tracing {
  const connections = new ExportConnections();
  const exporterOptions = {
    url: tracesUrl(config),
    headers: { ...config.otelExporterOtlpHeaders },
    timeoutMillis: config.otelExporterOtlpTimeout,
    httpAgentOptions: connections.agentFactory,
  };
  const exporter = config.otelExporterOtlpProtocol === 'http/json' ? new JsonTraceExporter(exporterOptions) : new ProtobufTraceExporter(exporterOptions);
  const processor = new BatchSpanProcessor({
    exporter,
    scheduledDelayMillis: config.otelBspScheduleDelay,
    exportTimeoutMillis: config.otelBspExportTimeout,
    maxQueueSize: config.otelBspMaxQueueSize,
    maxExportBatchSize: config.otelBspMaxExportBatchSize,
    selfObsMeterProvider: spanCountsMeterProvider(counters.exported, counters.dropped),
  });
  const attributes = config.otelResourceAttributes;
  const provider = new TracerProvider({
    // OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES (the SDK's rule).
    resource: resourceFromAttributes({
      'service.version': VERSION,
      ...attributes,
      'service.name': config.otelServiceName ?? attributes['service.name'] ?? 'plantstore',
    }),
    sampler: samplerOf(config.otelTracesSampler, config.otelTracesSamplerArg),
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('plantstore', VERSION);
  return {
    requests: new RequestSpans(tracer),
    commits: (system) => new CommitSpans(tracer, system),
    deliveries: new DeliverySpans(tracer),
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, FINAL_EXPORT_MS)));
      await Promise.race([provider.shutdown().catch(() => undefined), late]);
      clearTimeout(timer);
      connections.stop();
    },
  };
}
