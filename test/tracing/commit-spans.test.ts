import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type SpanContext, TraceFlags } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { CommitSpans } from '../../src/tracing/commit-spans.js';
import { samplerOf } from '../../src/tracing/sampler.js';

/** The span context of a request, sampled or not. */
function request(n: number, sampled: boolean): SpanContext {
  return {
    traceId: n.toString(16).padStart(32, '0'),
    spanId: n.toString(16).padStart(16, '0'),
    traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
  };
}

function commitSpans() {
  const exporter = new InMemorySpanExporter();
  // The ratio 0: only the links decide whether a commit span is kept.
  const provider = new TracerProvider({ sampler: samplerOf('parentbased_traceidratio', 0), spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return { spans: new CommitSpans(provider.getTracer('test'), 'sqlite'), exporter };
}

test('a commit span links the sampled requests only, and every traced plant keeps its traceparent', () => {
  const { spans, exporter } = commitSpans();
  const trace = spans.start([request(1, true), request(2, false), undefined, request(3, true)]);
  assert.ok(trace !== undefined);
  assert.deepEqual(trace.traceParents, [
    `00-${request(1, true).traceId}-${request(1, true).spanId}-01`,
    `00-${request(2, false).traceId}-${request(2, false).spanId}-00`,
    undefined,
    `00-${request(3, true).traceId}-${request(3, true).spanId}-01`,
  ]);
  trace.end();
  const [span] = exporter.getFinishedSpans();
  assert.deepEqual(
    span?.links.map((link) => link.context.spanId),
    [request(1, true).spanId, request(3, true).spanId],
  );
  assert.equal(span?.attributes['db.operation.batch.size'], 4);
});

test('a commit of requests none of which was sampled makes no span, and still gives each plant its traceparent', () => {
  const { spans, exporter } = commitSpans();
  const trace = spans.start([request(4, false), request(5, false)]);
  assert.deepEqual(trace?.traceParents, [`00-${request(4, false).traceId}-${request(4, false).spanId}-00`, `00-${request(5, false).traceId}-${request(5, false).spanId}-00`]);
  trace?.end();
  assert.deepEqual(exporter.getFinishedSpans(), []);
});

test('untraced requests make no commit trace', () => {
  assert.equal(commitSpans().spans.start([undefined, undefined]), undefined);
});
