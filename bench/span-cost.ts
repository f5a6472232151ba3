// npx tsx bench/span-cost.ts [--requests N] [--batch B]: the CPU time the OpenTelemetry SDK itself takes for
// the spans of one traced create, without the service: a SERVER span with the attributes the service gives it,
// and its share of a commit span (one for every B requests, B links), made, ended, batched by the SDK's
// BatchSpanProcessor and encoded by its OTLP protobuf serializer, as the service's exporter does before it
// sends (the sending itself left out). It is the least tracing can add to a create with this SDK, whatever the
// service does around it; compare it with the service's CPU a request in `npm run bench -- --traced`.
// `taskset -c 0 npx tsx bench/span-cost.ts` runs it on core 0, as the benchmark pins its server.
import { type Link, ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '300000' }, batch: { type: 'string', default: '63' } } });
const requests = Number(values.requests);
const batch = Number(values.batch);

/** The exporter's work but the sending: every batch encoded as the protobuf exporter encodes it. */
class EncodingExporter implements SpanExporter {
  bytes = 0;
  spans = 0;
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.bytes += ProtobufTraceSerializer.serializeRequest(spans)?.length ?? 0;
    this.spans += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

const exporter = new EncodingExporter();
const provider = new TracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'plantstore', 'service.version': '0.0.0' }),
  // The service's batch processor settings (OTEL_BSP_* defaults).
  spanProcessors: [new BatchSpanProcessor({ exporter, maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 5000 })],
});
const tracer = provider.getTracer('plantstore', '0.0.0');

/** The spans of `count` requests (rounded up to whole commits), yielding to the event loop after each commit as the service does; how many it made. */
async function traceRequests(count: number): Promise<number> {
  let done = 0;
  for (; done < count; done += batch) {
    const links: Link[] = [];
    for (let i = 0; i < batch; i++) {
      const span = tracer.startSpan(
        'POST /plants',
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': 'POST', 'http.route': '/plants', 'url.scheme': 'http', 'server.port': 8080, 'client.address': '127.0.0.1' },
        },
        ROOT_CONTEXT,
      );
      links.push({ context: span.spanContext() });
      span.setAttribute('http.response.status_code', 200);
      span.end();
    }
    const attributes = { 'db.system.name': 'sqlite', 'db.operation.name': 'INSERT', 'db.collection.name': 'plants', 'db.operation.batch.size': batch };
    tracer.startSpan('INSERT plants', { kind: SpanKind.CLIENT, attributes, links }, ROOT_CONTEXT).end();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return done;
}

await traceRequests(Math.min(requests, 50_000)); // warm-up: the code compiled, the heap grown
await provider.forceFlush();
const before = process.cpuUsage();
const spansBefore = exporter.spans;
const made = await traceRequests(requests);
await provider.forceFlush();
const cpu = process.cpuUsage(before);
const spans = exporter.spans - spansBefore;
const expected = made + made / batch;
process.stdout.write(
  `${((cpu.user + cpu.system) / made).toFixed(2)} µs of CPU a request (${made} requests, a commit span of ${batch} links for every ${batch}; ` +
    `${spans} of ${expected} spans encoded, ${(exporter.bytes / (exporter.spans || 1)).toFixed(0)} bytes a span)\n`,
);
if (spans < expected) process.stdout.write('some spans were dropped (queue full): the figure is too low\n');
await provider.shutdown();
