import { type Link, ROOT_CONTEXT, type SpanContext, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { CommitTrace, CommitTracer } from '../plants/group-commit.js';
import { DB_COLLECTION_NAME, DB_OPERATION_BATCH_SIZE, DB_OPERATION_NAME, DB_SYSTEM_NAME, ERROR_TYPE } from './attributes.js';
import { traceParentOf } from './trace-parent.js';

/** `db.system.name` of each store. */
export type DatabaseSystem = 'sqlite' | 'postgresql';

/**
 * The span of each group commit: one transaction for the plants of many
 * requests, so a root span of its own with a link to the SERVER span of
 * every request it carried (a span has one parent; a link says "caused
 * by" without that). It also gives each plant its request's `traceparent`
 * for the store to keep with the plant's webhook messages.
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
    for (const request of requests) {
      if (request !== undefined) links.push({ context: request });
      traceParents.push(request === undefined ? undefined : traceParentOf(request));
    }
    if (links.length === 0) return undefined;
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
