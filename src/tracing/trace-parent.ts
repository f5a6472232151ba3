import { type Context, defaultTextMapGetter, ROOT_CONTEXT, type SpanContext } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const propagator = new W3CTraceContextPropagator();

/** W3C Trace Context `traceparent`: `00-<trace id>-<span id>-<flags>`. */
export function traceParentOf(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${span.traceFlags.toString(16).padStart(2, '0')}`;
}

/** The remote parent a stored `traceparent` names, or the root when it names none or is malformed. */
export function contextOfTraceParent(traceParent: string | null): Context {
  return traceParent === null ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, { traceparent: traceParent }, defaultTextMapGetter);
}
