import { type Link, ROOT_CONTEXT, type SpanContext, SpanKind, SpanStatusCode, TraceFlags, type Tracer } from '@opentelemetry/api';
import type { CommitTrace, CommitTracer } from '../plants/group-commit.js';
import { DB_COLLECTION_NAME, DB_OPERATION_BATCH_SIZE, DB_OPERATION_NAME, DB_SYSTEM_NAME, ERROR_TYPE } from './attributes.js';
import { traceParentOf } from './trace-parent.js';

export type DatabaseSystem = 'sqlite' | 'postgresql';

/**
 * A group commit serves many requests: a root span linked to each sampled request's SERVER span (a span has one parent), none when none was sampled.
 * Each plant still gets its request's `traceparent`, sampled or not, for the store to keep with its webhook messages.
 */
export class CommitSpans implements CommitTracer {
  readonly #tracer: Tracer;
  readonly #system: DatabaseSystem;

  constructor(tracer: Tracer, system: DatabaseSystem) {
    this.#tracer = tracer;
    this.#system = system;
  }

  start(requests: readonly (SpanContext | undefined)[]): CommitTrace | undefined {
    const links: Link[] = [];
    const traceParents: (string | undefined)[] = [];
    let traced = false;
    for (const request of requests) {
      traceParents.push(request === undefined ? undefined : traceParentOf(request));
      if (request === undefined) continue;
      traced = true;
      // A link to a request left out by sampling names a span no backend receives, and costs its encoding.
      if ((request.traceFlags & TraceFlags.SAMPLED) !== 0) links.push({ context: request });
    }
    if (!traced) return undefined;
    if (links.length === 0) return { traceParents, end: () => undefined };
    const span = this.#tracer.startSpan(
      'INSERT plants',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [DB_SYSTEM_NAME]: this.#system,
          [DB_OPERATION_NAME]: 'INSERT',
          [DB_COLLECTION_NAME]: 'plants',
          [DB_OPERATION_BATCH_SIZE]: requests.length,
        },
        links,
      },
      ROOT_CONTEXT,
    );
    return {
      traceParents,
      end(error?: unknown) {
        if (error !== undefined) {
          span.setAttribute(ERROR_TYPE, error instanceof Error ? error.name : 'Error');
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }
}
