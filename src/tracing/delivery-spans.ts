import { type Attributes, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { AttemptResult } from '../webhooks/post-message.js';
import { ERROR_TYPE, HTTP_REQUEST_METHOD, HTTP_REQUEST_RESEND_COUNT, HTTP_RESPONSE_STATUS_CODE, SERVER_ADDRESS, SERVER_PORT, WEBHOOK_ATTEMPT, WEBHOOK_ID } from './attributes.js';
import { contextOfTraceParent, traceParentOf } from './trace-parent.js';

/** One attempt's span: `end` it with the attempt's result. */
export interface DeliverySpan {
  end(result: AttemptResult): void;
}

/** What an attempt's span is made of: the message's stored trace context, its receiver and its ids. */
export interface DeliveryAttempt {
  /** The `traceparent` of the create that caused the message, as stored with it; null for none. */
  readonly traceParent: string | null;
  readonly attempt: number;
  readonly webhookId: string;
  readonly url: URL;
}

/**
 * The CLIENT span of each webhook attempt, in the trace of the create that
 * caused the message (its SERVER span is the parent, across the outbox and
 * whatever time the message waited). The request carries the span's
 * `traceparent`, so that the receiver's own spans join the trace; it is
 * not signed content, so the signature is the same with or without it.
 * The URL's path and query are left out of the span: a receiver's URL may
 * hold a secret of its own there.
 */
export class DeliverySpans {
  readonly #tracer: Tracer;

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  /** Starts an attempt's span and adds its `traceparent` to `headers`. */
  start(attempt: DeliveryAttempt, headers: Record<string, string>): DeliverySpan {
    const { url } = attempt;
    const attributes: Attributes = {
      [HTTP_REQUEST_METHOD]: 'POST',
      [SERVER_ADDRESS]: url.hostname,
      [SERVER_PORT]: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
      [WEBHOOK_ATTEMPT]: attempt.attempt,
      [WEBHOOK_ID]: attempt.webhookId,
    };
    if (attempt.attempt > 1) attributes[HTTP_REQUEST_RESEND_COUNT] = attempt.attempt - 1;
    const span = this.#tracer.startSpan('POST', { kind: SpanKind.CLIENT, attributes }, contextOfTraceParent(attempt.traceParent));
    headers['traceparent'] = traceParentOf(span.spanContext());
    return {
      end(result) {
        const status = result.delivered ? result.status : statusOf(result.error);
        if (status !== undefined) span.setAttribute(HTTP_RESPONSE_STATUS_CODE, status);
        if (!result.delivered) {
          span.setAttribute(ERROR_TYPE, status === undefined ? failureOf(result.error) : String(status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }
}

/** The status of a failed attempt that got an answer (`HTTP 503: ...`). */
function statusOf(error: string): number | undefined {
  const match = /^HTTP (\d{3})/.exec(error);
  return match === null ? undefined : Number(match[1]);
}

/** A failure without an answer as a short, bounded type: a system error's code, or `timeout`; never the receiver's words. */
function failureOf(error: string): string {
  if (error.startsWith('no answer within')) return 'timeout';
  return /^[A-Z][A-Z_]+$/.test(error) ? error : '_OTHER';
}
